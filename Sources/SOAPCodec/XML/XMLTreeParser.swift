import Foundation

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Parses a document into ``XMLElementNode``s with FoundationXML's SAX parser, after
/// ``XMLSafetyCheck`` has refused DTDs and foreign encodings. Depth and element count are bounded.
public struct XMLTreeParser: Sendable {
    /// Bounds on what one document may contain.
    public struct Limits: Sendable {
        public var maxDepth: Int
        public var maxElements: Int
        /// Text of one element, in UTF-8 bytes. Checked while parsing, so a huge value is refused
        /// with its element's name before libxml2's own 10 MB node limit gives a vaguer error.
        public var maxTextBytes: Int

        public init(maxDepth: Int = 64, maxElements: Int = 2_000_000, maxTextBytes: Int = 1 << 20) {
            self.maxDepth = maxDepth
            self.maxElements = maxElements
            self.maxTextBytes = maxTextBytes
        }
    }

    /// Why a document could not be parsed.
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    public var limits: Limits

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// The document's root element.
    public func parse(_ data: Data) throws(ParseError) -> XMLElementNode {
        do {
            try XMLSafetyCheck.validate(data)
        } catch {
            throw ParseError(description: error.description)
        }
        let builder = TreeBuilder(limits: limits)
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.shouldReportNamespacePrefixes = false
        parser.shouldResolveExternalEntities = false
        parser.delegate = builder
        let succeeded = parser.parse()
        if let failure = builder.failure {
            throw ParseError(description: failure)
        }
        guard succeeded, let root = builder.root else {
            let reason = parser.parserError.map { describe($0, parser: parser) } ?? "not well-formed XML"
            throw ParseError(description: reason)
        }
        return root
    }

    private func describe(_ error: any Error, parser: XMLParser) -> String {
        "malformed XML at line \(parser.lineNumber), column \(parser.columnNumber) (code \((error as NSError).code))"
    }
}

/// Collects SAX events into a tree. Used by one parse on one thread.
private final class TreeBuilder: NSObject, XMLParserDelegate {
    private static let schemaInstance = "http://www.w3.org/2001/XMLSchema-instance"

    let limits: XMLTreeParser.Limits
    var stack: [XMLElementNode] = []
    var textBytes = 0
    var root: XMLElementNode?
    var elementCount = 0
    var failure: String?

    init(limits: XMLTreeParser.Limits) {
        self.limits = limits
    }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
        qualifiedName: String?, attributes: [String: String] = [:]
    ) {
        elementCount += 1
        if elementCount > limits.maxElements {
            fail(parser, "the document has more than \(limits.maxElements) elements")
            return
        }
        if stack.count >= limits.maxDepth {
            fail(parser, "the document nests deeper than \(limits.maxDepth) elements")
            return
        }
        let isNil = attributes.contains { key, value in
            (key == "nil" || key.hasSuffix(":nil")) && (value == "true" || value == "1")
        }
        let namespace = (namespaceURI?.isEmpty ?? true) ? nil : namespaceURI
        stack.append(XMLElementNode(name: elementName, namespace: namespace, isNil: isNil))
        textBytes = 0
    }

    func parser(
        _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?,
        qualifiedName: String?
    ) {
        guard let finished = stack.popLast() else { return }
        textBytes = 0
        if stack.isEmpty {
            root = finished
        } else {
            stack[stack.count - 1].children.append(finished)
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        appendText(string, parser)
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        appendText(String(decoding: CDATABlock, as: UTF8.self), parser)
    }

    private func appendText(_ text: String, _ parser: XMLParser) {
        guard !stack.isEmpty, failure == nil else { return }
        textBytes += text.utf8.count
        if textBytes > limits.maxTextBytes {
            fail(parser, "element '\(currentPath)' is longer than \(limits.maxTextBytes) bytes")
            return
        }
        stack[stack.count - 1].text += text
    }

    /// The open elements' names below the operation wrapper (`notification/recipients`), or
    /// from the root when the document is not a SOAP envelope.
    private var currentPath: String {
        let names = stack.map(\.name)
        let start = names.first == "Envelope" && names.count > 3 ? 3 : 0
        return names[start...].joined(separator: "/")
    }

    func parser(_ parser: XMLParser, foundInternalEntityDeclarationWithName name: String, value: String?) {
        fail(parser, "entity declarations are not accepted")
    }

    func parser(
        _ parser: XMLParser, foundExternalEntityDeclarationWithName name: String, publicID: String?,
        systemID: String?
    ) {
        fail(parser, "entity declarations are not accepted")
    }

    func parser(_ parser: XMLParser, resolveExternalEntityName name: String, systemID: String?) -> Data? {
        fail(parser, "external entities are not accepted")
        return nil
    }

    private func fail(_ parser: XMLParser, _ reason: String) {
        if failure == nil { failure = reason }
        parser.abortParsing()
    }
}
