#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// Runs a program and collects its standard output, blocking the calling thread (run it off
/// the cooperative pool, e.g. through ``BlockingWork``). Spawned with `posix_spawn` directly:
/// Foundation's `Process.run` crashed the test process (a bad pointer in its own memcpy) when
/// it launched programs from several threads while the process held over a thousand open
/// descriptors — the state of a parallel test run.
package enum ProgramRun {
    /// What the program left.
    package struct Outcome: Sendable {
        package var status: Int32
        package var output: Data
    }

    /// Why the program could not be started.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// Runs `executable` with `arguments`, writing `input` to its standard input (on a thread of
    /// its own, so a program that answers before reading everything cannot block it); standard
    /// error goes to /dev/null, or with `errorsToOutput` into the output.
    package static func run(_ executable: String, _ arguments: [String], input: Data? = nil, errorsToOutput: Bool = false) throws -> Outcome {
        // Pipes made, marked close-on-exec and handed to the program one launch at a time: a
        // program spawned by another thread in between would inherit this one's pipe ends and
        // hold its output open.
        let (writer, reader, pid) = try launching.withLock { _ in try spawn(executable, arguments, errorsToOutput: errorsToOutput) }
        let feeding = Thread {
            if let input {
                input.withUnsafeBytes { bytes in
                    var offset = 0
                    while offset < bytes.count {
                        let written = write(writer, bytes.baseAddress! + offset, bytes.count - offset)
                        if written < 0 && errno == EINTR { continue }
                        if written <= 0 { break }
                        offset += written
                    }
                }
            }
            close(writer)
        }
        feeding.start()
        var output = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(reader, &buffer, buffer.count)
            if count > 0 {
                output.append(contentsOf: buffer[0..<count])
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                break
            }
        }
        close(reader)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED/WEXITSTATUS are macros: a normal exit has the low seven bits clear.
        let exited = (status & 0x7F) == 0
        return Outcome(status: exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F), output: output)
    }

    private static let launching = Mutex(())

    /// Starts the program on two new pipes; returns our ends (its input, its output) and its pid.
    private static func spawn(_ executable: String, _ arguments: [String], errorsToOutput: Bool) throws -> (Int32, Int32, pid_t) {
        var stdinPipe: [Int32] = [-1, -1], stdoutPipe: [Int32] = [-1, -1]
        guard pipe(&stdinPipe) == 0 else { throw Failure(description: "pipe: \(String(cString: strerror(errno)))") }
        guard pipe(&stdoutPipe) == 0 else {
            close(stdinPipe[0])
            close(stdinPipe[1])
            throw Failure(description: "pipe: \(String(cString: strerror(errno)))")
        }
        for descriptor in stdinPipe + stdoutPipe { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        if errorsToOutput {
            posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(stdinPipe[0])
        close(stdoutPipe[1])
        guard spawned == 0 else {
            close(stdinPipe[1])
            close(stdoutPipe[0])
            throw Failure(description: "cannot run \(executable): \(String(cString: strerror(spawned)))")
        }
        return (stdinPipe[1], stdoutPipe[0], pid)
    }
}
