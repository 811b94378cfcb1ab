import Foundation
import PigeonCommandLine
import PigeonCore

// Writes to peers that hung up (HTTP clients, push services, the bank) fail with EPIPE instead of
// ending the process: set once, before anything starts.
ProcessSignals.ignoreBrokenPipes()
let status = await CommandLineTool(arguments: Array(CommandLine.arguments.dropFirst())).run()
exit(status)
