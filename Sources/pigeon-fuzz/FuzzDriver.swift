#if PIGEON_FUZZ
import Foundation

/// libFuzzer's entry when it runs without its own `main`: it parses its flags from argv and
/// calls `callback` with each input.
@_silgen_name("LLVMFuzzerRunDriver")
private func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The target named by `PIGEON_FUZZ_TARGET` (libFuzzer owns the command line), chosen once.
private let selected: (@Sendable (Data) -> Void)? = FuzzTargets.all[ProcessInfo.processInfo.environment["PIGEON_FUZZ_TARGET"] ?? ""]

/// libFuzzer's per-input entry (when its own `main` is linked, it calls this directly).
@_cdecl("LLVMFuzzerTestOneInput")
package func fuzzOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    guard let selected else { fatalError("PIGEON_FUZZ_TARGET must be one of: \(FuzzTargets.all.keys.sorted().joined(separator: ", "))") }
    selected(bytes.map { Data(bytes: $0, count: count) } ?? Data())
    return 0
}

/// Runs libFuzzer on the selected target; exits with its status.
enum FuzzDriver {
    static func run() -> Never {
        guard selected != nil else {
            FileHandle.standardError.write(Data("PIGEON_FUZZ_TARGET must be one of: \(FuzzTargets.all.keys.sorted().joined(separator: ", "))\n".utf8))
            exit(2)
        }
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(runFuzzerDriver(&argc, &argv) { bytes, count in
            selected?(bytes.map { Data(bytes: $0, count: count) } ?? Data())
            return 0
        })
    }
}
#endif
