import Foundation
import PigeonCrypto

extension CommandLineTool {
    static let hashPasswordHelp = """
        pigeon hash-password < password

        Reads one password (the first line of standard input, 12 to 1,024 bytes) and prints its
        yescrypt hash, made by the system's crypt library: the middle field of a consoleUsersFile
        line, e.g. `printf '%s\\n' "$PASSWORD" | pigeon hash-password` → `ana:<hash>:support`.
        """

    func hashPassword(_ options: [String]) -> Int32 {
        if options.contains("--help") || options.contains("-h") {
            print(Self.hashPasswordHelp)
            return 0
        }
        guard options.isEmpty else {
            printError("pigeon hash-password: takes no options; the password comes on standard input")
            return 2
        }
        guard let line = readLine(strippingNewline: true), line.utf8.count >= 12 else {
            printError("pigeon hash-password: give a password of at least 12 characters on standard input")
            return 2
        }
        guard let hash = PasswordHash.make(line) else {
            printError("pigeon hash-password: the crypt library refused (a password over 1,024 bytes or holding NUL?)")
            return 1
        }
        print(hash)
        return 0
    }
}
