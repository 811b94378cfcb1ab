import Foundation
import PigeonServer

let status = await CommandLineTool(arguments: Array(CommandLine.arguments.dropFirst())).run()
exit(status)
