internal import CXMLShim
import Foundation

/// Parses a document into ``XMLElementNode``s with libxml2's SAX2 push parser, after
/// ``XMLSafetyCheck`` has refused DTDs and foreign encodings. Depth, element count and text per
/// element are bounded while parsing.
///
/// libxml2 is driven through a small C shim rather than through FoundationXML's `XMLParser`,
/// which leaks its bridged error (about 300 bytes) on every malformed document — a slow memory
/// leak any client could trigger.
package struct XMLTreeParser: Sendable {
    /// Bounds on what one document may contain.
    package struct Limits: Sendable {
        package var maxDepth: Int
        package var maxElements: Int
        /// Text of one element, in UTF-8 bytes; checked as the text arrives.
        package var maxTextBytes: Int

        package init(maxDepth: Int = 64, maxElements: Int = 2_000_000, maxTextBytes: Int = 1 << 20) {
            self.maxDepth = maxDepth
            self.maxElements = maxElements
            self.maxTextBytes = maxTextBytes
        }

        /// The limits for documents of at most `bytes`: the element count follows the size (one
        /// element per 8 bytes, never fewer than the default), so any document within a size the
        /// operator allows is read — a parsed element costs about ten times its smallest text.
        package init(forDocumentsUpTo bytes: Int) {
            self.init(maxElements: max(Limits().maxElements, bytes / 8))
        }
    }

    /// Why a document could not be parsed.
    package struct ParseError: Error, Equatable, CustomStringConvertible {
        package var description: String
    }

    package var limits: Limits

    package init(limits: Limits = Limits()) {
        self.limits = limits
    }

    private static let initialized: Bool = {
        pigeon_xml_initialize()
        return true
    }()

    /// The document's root element.
    package func parse(_ data: Data) throws(ParseError) -> XMLElementNode {
        try parse(data, streaming: []).root
    }

    /// The document's root element, and the texts of the elements at any of `streamedPaths`
    /// (local names from the root, e.g. `Envelope/Body/sendNotification/notification/recipients`)
    /// in document order, read into a list instead of into the tree: one string per element
    /// rather than a node, for a field that repeats a million times. Such an element must hold
    /// text only; one with `xsi:nil` is left out, as the schema decoder leaves out nil elements.
    package func parse(_ data: Data, streaming streamedPaths: [[String]]) throws(ParseError) -> (root: XMLElementNode, list: [String]) {
        do {
            try XMLSafetyCheck.validate(data)
        } catch {
            throw ParseError(description: error.description)
        }
        _ = Self.initialized
        let builder = TreeBuilder(limits: limits, streamedPaths: streamedPaths)
        var callbacks = pigeon_xml_callbacks(start_element: startElement, end_element: endElement, text: appendText)
        var error = pigeon_xml_error()
        let status = withExtendedLifetime(builder) {
            data.withUnsafeBytes { buffer in
                pigeon_xml_parse(
                    buffer.baseAddress?.assumingMemoryBound(to: CChar.self), buffer.count, &callbacks,
                    Unmanaged.passUnretained(builder).toOpaque(), &error)
            }
        }
        if let failure = builder.failure {
            throw ParseError(description: failure)
        }
        guard status == 0, let root = builder.root else {
            let message = withUnsafeBytes(of: error.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            throw ParseError(description: "malformed XML at line \(error.line), column \(error.column): \(message)")
        }
        return (root, builder.list)
    }
}

/// Collects SAX events into a tree. Used by one parse on one thread.
private final class TreeBuilder {
    let limits: XMLTreeParser.Limits
    var stack: [XMLElementNode] = []
    var textBytes = 0
    var elementCount = 0
    var root: XMLElementNode?
    /// A limit we enforced.
    var failure: String?
    /// Paths whose elements' texts go to ``list``.
    let streamedPaths: [[String]]
    var list: [String] = []
    /// The text of the streamed element being read (nil when none is open), its name and nil flag.
    var streamedText: String?
    var streamedName = ""
    var streamedIsNil = false

    init(limits: XMLTreeParser.Limits, streamedPaths: [[String]]) {
        self.limits = limits
        self.streamedPaths = streamedPaths
    }

    /// Whether an element `name` opened now, below the open elements, is a streamed one.
    private func isStreamed(_ name: String) -> Bool {
        streamedPaths.contains { path in
            path.count == stack.count + 1 && path.last == name && zip(path, stack).allSatisfy { $0 == $1.name }
        }
    }

    static func from(_ pointer: UnsafeMutableRawPointer?) -> TreeBuilder {
        Unmanaged<TreeBuilder>.fromOpaque(pointer!).takeUnretainedValue()
    }

    /// Returns non-zero to stop the parse.
    func fail(_ reason: String) -> Int32 {
        if failure == nil { failure = reason }
        return 1
    }

    func start(name: String, namespace: String?, isNil: Bool) -> Int32 {
        elementCount += 1
        if elementCount > limits.maxElements {
            return fail("the document has more than \(limits.maxElements) elements")
        }
        if stack.count >= limits.maxDepth {
            return fail("the document nests deeper than \(limits.maxDepth) elements")
        }
        if streamedText != nil {
            return fail("element '\(currentPath)' must contain text only, found element '\(name)'")
        }
        if !streamedPaths.isEmpty && isStreamed(name) {
            streamedText = ""
            streamedName = name
            streamedIsNil = isNil
            textBytes = 0
            return 0
        }
        stack.append(XMLElementNode(name: name, namespace: namespace, isNil: isNil))
        textBytes = 0
        return 0
    }

    func end() -> Int32 {
        if let text = streamedText {
            if !streamedIsNil { list.append(text) }
            streamedText = nil
            textBytes = 0
            return 0
        }
        guard let finished = stack.popLast() else { return 0 }
        textBytes = 0
        if stack.isEmpty {
            root = finished
        } else {
            stack[stack.count - 1].children.append(finished)
        }
        return 0
    }

    func append(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        guard !stack.isEmpty else { return 0 }
        textBytes += bytes.count
        if textBytes > limits.maxTextBytes {
            return fail("element '\(currentPath)' is longer than \(limits.maxTextBytes) bytes")
        }
        if streamedText != nil {
            streamedText! += String(decoding: bytes, as: UTF8.self)
            return 0
        }
        stack[stack.count - 1].text += String(decoding: bytes, as: UTF8.self)
        return 0
    }

    /// The open elements' names below the operation wrapper (`notification/recipients`), or
    /// from the root when the document is not a SOAP envelope.
    private var currentPath: String {
        let names = stack.map(\.name) + (streamedText == nil ? [] : [streamedName])
        let start = names.first == "Envelope" && names.count > 3 ? 3 : 0
        return names[start...].joined(separator: "/")
    }
}

private let startElement: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, Int32) -> Int32 = { context, name, uri, isNil in
    let namespace = uri.map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
    return TreeBuilder.from(context).start(name: name.map { String(cString: $0) } ?? "", namespace: namespace, isNil: isNil != 0)
}

private let endElement: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { context in
    TreeBuilder.from(context).end()
}

private let appendText: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, Int) -> Int32 = { context, bytes, length in
    guard let bytes else { return 0 }
    return TreeBuilder.from(context).append(UnsafeRawBufferPointer(start: bytes, count: length))
}
