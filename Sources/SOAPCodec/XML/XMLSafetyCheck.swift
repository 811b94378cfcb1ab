/// A byte-level gate run before any XML parser sees a request.
///
/// FoundationXML's parsers either resolve external entities (`XMLDocument`) or expand internal
/// ones at great cost (`XMLParser`), so documents with a DTD are refused outright. A `<!DOCTYPE`
/// search is only sound once the encoding is pinned, so the check first insists on UTF-8 (or
/// ASCII): no NUL bytes (rules out UTF-16 and UTF-32), `<` as the first character after an
/// optional UTF-8 byte-order mark and whitespace (rules out UTF-7's `+ADw-` and EBCDIC's `L`),
/// and an encoding declaration, if any, naming UTF-8 or US-ASCII.
///
/// It also bounds every tag (at most ``maximumTagBytes`` bytes and ``maximumAttributes``
/// attributes): libxml2 checks an element's attributes for duplicates in quadratic time, so one
/// start tag with a hundred thousand attributes would cost seconds of CPU.
package enum XMLSafetyCheck {
    /// The longest tag accepted (an envelope with its namespace declarations is a few hundred).
    package static let maximumTagBytes = 8192
    /// The most attributes (namespace declarations included) one tag may carry.
    package static let maximumAttributes = 32

    /// Why a document was refused before parsing.
    package enum Rejection: Error, Equatable, CustomStringConvertible {
        case empty
        case nulByte
        case notMarkup
        case unsupportedEncoding(String)
        case documentTypeDeclaration
        case oversizedTag

        package var description: String {
            switch self {
            case .empty: "the request body is empty"
            case .nulByte: "the request contains NUL bytes; only UTF-8 is accepted"
            case .notMarkup: "the request does not start with '<'; only UTF-8 XML is accepted"
            case .unsupportedEncoding(let name):
                "encoding '\(name)' is not accepted; send UTF-8"
            case .documentTypeDeclaration:
                "DTDs and entity declarations are not accepted"
            case .oversizedTag:
                "a tag is longer than \(XMLSafetyCheck.maximumTagBytes) bytes or has more than \(XMLSafetyCheck.maximumAttributes) attributes"
            }
        }
    }

    /// Throws when `bytes` must not reach an XML parser.
    package static func validate(_ bytes: some Collection<UInt8>) throws(Rejection) {
        let data = Array(bytes)
        guard !data.isEmpty else { throw .empty }
        if data.contains(0) { throw .nulByte }

        var start = 0
        if data.count >= 3, data[0] == 0xEF, data[1] == 0xBB, data[2] == 0xBF { start = 3 }
        while start < data.count, isXMLWhitespace(data[start]) { start += 1 }
        guard start < data.count else { throw .empty }
        guard data[start] == UInt8(ascii: "<") else { throw .notMarkup }

        if let encoding = declaredEncoding(data, from: start) {
            let normalized = encoding.lowercased()
            guard ["utf-8", "utf8", "us-ascii", "ascii"].contains(normalized) else {
                throw .unsupportedEncoding(encoding)
            }
        }
        if containsDeclaration(data, from: start) { throw .documentTypeDeclaration }
        if hasOversizedTag(data, from: start) { throw .oversizedTag }
    }

    /// Whether a tag exceeds ``maximumTagBytes`` or ``maximumAttributes``. Comments, CDATA
    /// sections and processing instructions are skipped; `>` and `=` inside quoted attribute
    /// values do not end a tag or count as attributes.
    private static func hasOversizedTag(_ data: [UInt8], from start: Int) -> Bool {
        let open = UInt8(ascii: "<"), close = UInt8(ascii: ">"), equals = UInt8(ascii: "=")
        let quote = UInt8(ascii: "\""), apostrophe = UInt8(ascii: "'")
        var index = start
        while index < data.count {
            guard data[index] == open else {
                index += 1
                continue
            }
            if let end = skipSpecial(data, at: index) {
                index = end
                continue
            }
            var cursor = index + 1
            var attributes = 0
            var quoted: UInt8? = nil
            while cursor < data.count {
                let byte = data[cursor]
                if let mark = quoted {
                    if byte == mark { quoted = nil }
                } else if byte == quote || byte == apostrophe {
                    quoted = byte
                } else if byte == equals {
                    attributes += 1
                    if attributes > maximumAttributes { return true }
                } else if byte == close {
                    break
                }
                cursor += 1
                if cursor - index > maximumTagBytes { return true }
            }
            index = cursor + 1
        }
        return false
    }

    /// The index after a comment, CDATA section or processing instruction starting at `index`;
    /// nil when a tag starts there.
    private static func skipSpecial(_ data: [UInt8], at index: Int) -> Int? {
        // Element tags (all but a few of a document's tags) are told apart without comparing.
        guard index + 1 < data.count, data[index + 1] == UInt8(ascii: "!") || data[index + 1] == UInt8(ascii: "?") else {
            return nil
        }
        func starts(_ text: StaticString) -> Bool {
            let bytes = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
            return index + bytes.count <= data.count && data[index..<index + bytes.count].elementsEqual(bytes)
        }
        func after(_ terminator: StaticString, from position: Int) -> Int {
            let bytes = UnsafeBufferPointer(start: terminator.utf8Start, count: terminator.utf8CodeUnitCount)
            var cursor = position
            while cursor + bytes.count <= data.count {
                if data[cursor] == bytes[0] && data[cursor..<cursor + bytes.count].elementsEqual(bytes) { return cursor + bytes.count }
                cursor += 1
            }
            return data.count
        }
        if starts("<!--") { return after("-->", from: index + 4) }
        if starts("<![CDATA[") { return after("]]>", from: index + 9) }
        if starts("<?") { return after("?>", from: index + 2) }
        return nil
    }

    private static func isXMLWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// The `encoding="…"` of an `<?xml …?>` declaration at `start`, if there is one.
    private static func declaredEncoding(_ data: [UInt8], from start: Int) -> String? {
        let prefix = Array("<?xml".utf8)
        guard data.count >= start + prefix.count,
              Array(data[start..<start + prefix.count]) == prefix
        else { return nil }
        var end = start + prefix.count
        while end + 1 < data.count, !(data[end] == UInt8(ascii: "?") && data[end + 1] == UInt8(ascii: ">")) {
            end += 1
        }
        let declaration = String(decoding: data[start..<min(end, data.count)], as: UTF8.self)
        guard let range = declaration.range(of: "encoding") else { return nil }
        var rest = declaration[range.upperBound...].drop { $0 == " " || $0 == "=" || $0 == "\t" }
        guard let quote = rest.first, quote == "\"" || quote == "'" else { return "" }
        rest = rest.dropFirst()
        return String(rest.prefix { $0 != quote })
    }

    /// Whether a markup declaration (`<!DOCTYPE`, `<!ENTITY`, `<!ELEMENT`, …) appears anywhere.
    /// Comments (`<!--`) and CDATA sections (`<![CDATA[`) are allowed.
    private static func containsDeclaration(_ data: [UInt8], from start: Int) -> Bool {
        var index = start
        while index + 1 < data.count {
            if data[index] == UInt8(ascii: "<"), data[index + 1] == UInt8(ascii: "!") {
                let next = index + 2 < data.count ? data[index + 2] : 0
                if next != UInt8(ascii: "-") && next != UInt8(ascii: "[") { return true }
                if next == UInt8(ascii: "[") {
                    let cdata = Array("<![CDATA[".utf8)
                    if index + cdata.count > data.count
                        || Array(data[index..<index + cdata.count]) != cdata
                    {
                        return true
                    }
                }
            }
            index += 1
        }
        return false
    }
}
