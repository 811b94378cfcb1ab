/// The rule for identifiers that come from outside (notification ids, user ids, device-API
/// fields): no control characters. CR and LF would reach HTTP headers of push requests (the
/// collapse id is the notification id), NUL would be cut by C libraries, and any of them would
/// forge or hide log lines.
package enum ControlCharacters {
    /// Whether `text` holds a C0 control (CR, LF, NUL, …), DEL or a C1 control.
    package static func present(in text: String) -> Bool {
        text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
    }
}
