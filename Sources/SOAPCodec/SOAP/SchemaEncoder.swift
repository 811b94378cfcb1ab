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

    private func encodeValue(_ value: SOAPValue, as type: XSDType, into output: DocumentWriter) {
        switch value {
        case .string(let text): output += XMLEscaping.escape(text)
        case .int(let number): output += String(number)
        case .long(let number): output += String(number)
        case .boolean(let flag): output += flag ? "true" : "false"
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

