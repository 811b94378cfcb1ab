/// Writes a ``SOAPRecord`` as unqualified child elements in the ``ComplexType``'s sequence order,
/// the way JAX-WS does with `elementFormDefault="unqualified"`.
struct SchemaEncoder {
    func encode(_ record: SOAPRecord, as type: ComplexType, into output: DocumentWriter) {
        for field in type.fields {
            for value in record.fields[field.name] ?? [] {
                output += "<\(field.name)>"
                encodeValue(value, as: field.type, into: output)
                output += "</\(field.name)>"
            }
        }
    }

    /// About how many bytes ``encode(_:as:into:)`` writes for `record` (exact but for escaping
    /// and numbers), so that a large document's buffer is allocated once: grown by doubling, a
    /// 54 MiB answer held its old and new buffers together at 32 + 64 MiB.
    static func sizeEstimate(_ record: SOAPRecord) -> Int {
        record.fields.reduce(0) { total, field in
            total + field.value.reduce(0) { $0 + 2 * field.key.utf8.count + 5 + sizeEstimate(of: $1) }
        }
    }

    private static func sizeEstimate(of value: SOAPValue) -> Int {
        switch value {
        case .string(let text): text.utf8.count
        case .int, .long, .boolean: 20
        case .bytes(let data): (data.count + 2) / 3 * 4
        case .record(let record): sizeEstimate(record)
        // <entry><key>…</key><value>…</value></entry>
        case .entries(let entries): entries.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 41 }
        }
    }

    private func encodeValue(_ value: SOAPValue, as type: XSDType, into output: DocumentWriter) {
        switch value {
        case .string(let text): output += XMLEscaping.escape(text)
        case .int(let number): output += String(number)
        case .long(let number): output += String(number)
        case .boolean(let flag): output += flag ? "true" : "false"
        case .bytes(let data): output += data.base64EncodedString()
        case .record(let record):
            if case .complex(let complex) = type {
                encode(record, as: complex, into: output)
            }
        case .entries(let entries):
            // The map type's one field is the entry element; its first two fields are key and value.
            guard case .complex(let map) = type, let entry = map.fields.first, case .complex(let pair) = entry.type,
                  pair.fields.count >= 2
            else { return }
            let (key, value) = (pair.fields[0].name, pair.fields[1].name)
            let openKey = "<\(entry.name)><\(key)>", betweenKeyAndValue = "</\(key)><\(value)>"
            let closeValue = "</\(value)></\(entry.name)>"
            for item in entries {
                output += openKey
                output += XMLEscaping.escape(item.key)
                output += betweenKeyAndValue
                output += XMLEscaping.escape(item.value)
                output += closeValue
            }
        }
    }
}

