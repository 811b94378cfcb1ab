import Foundation

/// Decodes an element against a ``ComplexType``: required fields present, repetition within
/// bounds, scalars of the right type and length. Children may be qualified or not and come in any
/// order; unknown children are ignored (as JAXB does). Every fault names the offending field by
/// its path, e.g. `notification/timeout`.
struct SchemaDecoder {
    /// A repeated string field the parser read into a list (``OperationDescription/streamedList``):
    /// checked here like the field's elements would be, and left out of the record.
    struct StreamedList {
        /// The field's path, e.g. `notification/recipients`.
        var path: String
        var values: [String]
    }

    var streamed: StreamedList?

    init(streamed: StreamedList? = nil) {
        self.streamed = streamed
    }

    func decode(_ element: XMLElementNode, as type: ComplexType, path: String) throws(SOAPFault) -> SOAPRecord {
        // Children by field position (types have a handful of fields: a scan beats hashing).
        var grouped = [[Int]](repeating: [], count: type.fields.count)
        for (childIndex, child) in element.children.enumerated() where !child.isNil {
            if let index = type.fields.firstIndex(where: { $0.name == child.name }) {
                grouped[index].append(childIndex)
            }
        }
        var record = SOAPRecord()
        record.fields.reserveCapacity(type.fields.count)
        for (fieldIndex, field) in type.fields.enumerated() {
            let occurrences = grouped[fieldIndex]
            var fieldPath: String { path.isEmpty ? field.name : "\(path)/\(field.name)" }
            if let streamed, streamed.path == fieldPath {
                // Read into a list by the parser: the same bounds, and each value as a string.
                try checkCount(streamed.values.count, of: field, path: fieldPath)
                guard case .string(let maxLength) = field.type else {
                    throw .server("field '\(fieldPath)' is streamed but is not a string")
                }
                for value in streamed.values { try checkLength(value, maxLength: maxLength, path: fieldPath) }
                continue
            }
            try checkCount(occurrences.count, of: field, path: fieldPath)
            guard !occurrences.isEmpty else { continue }
            var values: [SOAPValue] = []
            values.reserveCapacity(occurrences.count)
            for occurrence in occurrences {
                values.append(try decodeValue(element.children[occurrence], as: field.type, path: fieldPath))
            }
            record.fields[field.name] = values
        }
        return record
    }

    /// How many times `field` appears against its minOccurs and maxOccurs.
    private func checkCount(_ count: Int, of field: Field, path: String) throws(SOAPFault) {
        if count < field.minOccurs {
            throw .client(
                field.minOccurs == 1
                    ? "missing required element '\(path)'"
                    : "element '\(path)' must appear at least \(field.minOccurs) times")
        }
        if let maxOccurs = field.maxOccurs, count > maxOccurs {
            throw .client(
                maxOccurs == 1
                    ? "element '\(path)' appears \(count) times but may appear once"
                    : "element '\(path)' appears more than \(maxOccurs) times")
        }
    }

    /// A string value against its length in characters.
    private func checkLength(_ text: String, maxLength: Int, path: String) throws(SOAPFault) {
        // Characters never outnumber UTF-8 bytes: count them only when the bytes could exceed.
        if text.utf8.count > maxLength && text.count > maxLength {
            throw .client("element '\(path)' is longer than \(maxLength) characters")
        }
    }

    private func decodeValue(_ element: XMLElementNode, as type: XSDType, path: String) throws(SOAPFault) -> SOAPValue {
        switch type {
        case .string(let maxLength):
            try checkLength(element.text, maxLength: maxLength, path: path)
            return .string(element.text)
        case .int:
            guard let value = Int32(trimmed(element.text)) else {
                throw .client("element '\(path)' must be an int, got '\(excerpt(element.text))'")
            }
            return .int(value)
        case .long:
            guard let value = Int64(trimmed(element.text)) else {
                throw .client("element '\(path)' must be a long, got '\(excerpt(element.text))'")
            }
            return .long(value)
        case .boolean:
            switch trimmed(element.text) {
            case "true", "1": return .boolean(true)
            case "false", "0": return .boolean(false)
            default:
                throw .client("element '\(path)' must be a boolean, got '\(excerpt(element.text))'")
            }
        case .base64Binary(let maxBytes):
            return .bytes(try decodeBase64(element.text, maxBytes: maxBytes, path: path))
        case .enumeration(let enumeration):
            let value = String(trimmed(element.text))
            guard enumeration.values.contains(value) else {
                throw .client(
                    "element '\(path)' must be one of \(enumeration.values.joined(separator: ", ")), got '\(excerpt(element.text))'")
            }
            return .string(value)
        case .complex(let complex):
            return .record(try decode(element, as: complex, path: path))
        }
    }

    /// `xs:base64Binary`: the canonical alphabet with padding; whitespace (line breaks of MIME
    /// encoders) is allowed anywhere, anything else is refused rather than skipped.
    private func decodeBase64(_ text: String, maxBytes: Int, path: String) throws(SOAPFault) -> Data {
        var text = text
        let compact = text.withUTF8 { bytes -> [UInt8] in
            var compact = [UInt8]()
            compact.reserveCapacity(bytes.count)
            for byte in bytes where byte != 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0D {
                compact.append(byte)
            }
            return compact
        }
        guard compact.count / 4 * 3 <= maxBytes + 2 else {
            throw .client("element '\(path)' is larger than \(maxBytes) bytes")
        }
        guard compact.count % 4 == 0, let data = Data(base64Encoded: Data(compact)) else {
            throw .client("element '\(path)' must be base64Binary, got '\(excerpt(text))'")
        }
        guard data.count <= maxBytes else { throw .client("element '\(path)' is larger than \(maxBytes) bytes") }
        return data
    }

    private func trimmed(_ text: String) -> Substring {
        let scalars = text.unicodeScalars
        let isSpace: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = scalars.firstIndex(where: { !isSpace($0) }),
              let last = scalars.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return Substring(scalars[first...last])
    }

    /// A value quoted in a fault is cut short so a huge input cannot bloat the answer.
    private func excerpt(_ text: String) -> String {
        text.count > 40 ? "\(text.prefix(40))…" : text
    }
}
