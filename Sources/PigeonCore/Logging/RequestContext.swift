/// The HTTP request a task works for: its id goes on every log line written while the request is
/// handled (the access line and the lines the request causes), so an operator greps one id.
package enum RequestContext {
    /// The id of the request the current task works for, if any.
    @TaskLocal package static var id: String?

    /// A request id a client sent (`X-Request-Id`) if it is short and plain, else a new one.
    package static func id(offered: String?) -> String {
        if let offered, (1...64).contains(offered.utf8.count),
           offered.utf8.allSatisfy({ byte in
               (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D || byte == 0x5F || byte == 0x2E
           }) {
            return offered
        }
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() & 0xFFFF_FFFF_FFFF, radix: 16)
    }
}
