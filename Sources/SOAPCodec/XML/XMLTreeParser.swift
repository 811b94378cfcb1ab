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

        public init(maxDepth: Int = 64, maxElements: Int = 2_000_000) {
            self.maxDepth = maxDepth
            self.maxElements = maxElements
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
    }

    func parser(
        _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?,
        qualifiedName: String?
    ) {
        guard let finished = stack.popLast() else { return }
        if stack.isEmpty {
            root = finished
        } else {
            stack[stack.count - 1].children.append(finished)
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += string
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += String(decoding: CDATABlock, as: UTF8.self)
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
