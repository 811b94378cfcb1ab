import Foundation
import PigeonCommandLine

// Writes to peers that hung up (HTTP clients, push services, the bank) fail with EPIPE instead of
// ending the process.
signal(SIGPIPE, SIG_IGN)
let status = await CommandLineTool(arguments: Array(CommandLine.arguments.dropFirst())).run()
exit(status)
