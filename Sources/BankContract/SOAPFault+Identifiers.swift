import PigeonDomain
import SOAPCodec

extension SOAPFault {
    /// Throws a Client fault naming `field` when `value` breaks the identifier rule
    /// (``ControlCharacters``).
    package static func refuseControlCharacters(_ value: String, in field: String) throws(SOAPFault) {
        if ControlCharacters.present(in: value) {
            throw .client("element '\(field)' contains control characters (CR, LF, NUL, …)")
        }
    }
}
