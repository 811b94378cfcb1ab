import Foundation

/// A decoded request: which operation, in which SOAP version, with which parameters.
package struct SOAPRequest: Sendable {
    package var version: SOAPVersion
    package var operation: OperationDescription
    /// The parameters, except the operation's ``OperationDescription/streamedList``.
    package var parameters: SOAPRecord
    /// The values of the operation's ``OperationDescription/streamedList`` in document order
    /// (checked against its field: count and length), or empty.
    package var streamedList: [String] = []
}

/// A request that could not be decoded: the fault to answer, in the version to answer it in.
package struct SOAPRequestError: Error, CustomStringConvertible {
    package var version: SOAPVersion
    package var fault: SOAPFault

    package var description: String { fault.description }
}

/// Reads and writes the SOAP messages of one ``ServiceDescription``: SOAP 1.1 and 1.2 envelopes,
/// document/literal wrapped, JAX-WS style (qualified wrapper, unqualified children).
package struct SOAPCodec: Sendable {
    package let service: ServiceDescription
    package let parser: XMLTreeParser
    /// Where each operation's streamed list sits in a request, from the envelope.
    private let streamedPaths: [[String]]

    package init(service: ServiceDescription, limits: XMLTreeParser.Limits = .init()) {
        self.service = service
        self.parser = XMLTreeParser(limits: limits)
        streamedPaths = service.operations.compactMap { operation in
            operation.streamedList.map { ["Envelope", "Body", operation.name] + $0 }
        }
    }

    // MARK: Requests

    /// Decodes a request body. Requests are accepted with the wrapper qualified by the service's
    /// namespace or bare, and with children qualified or not.
    package func decodeRequest(_ body: Data, contentType: String?) throws(SOAPRequestError) -> SOAPRequest {
        let fallbackVersion = SOAPVersion(contentType: contentType)
        let root: XMLElementNode
        let list: [String]
        do {
            (root, list) = try parser.parse(body, streaming: streamedPaths)
        } catch {
            throw SOAPRequestError(version: fallbackVersion, fault: .client(error.description))
        }
        let (version, wrapper) = try envelopeContent(root, fallbackVersion: fallbackVersion)
        // Bare wrappers are accepted: with no namespace, or inheriting the envelope's default one.
        if let namespace = wrapper.namespace, namespace != service.targetNamespace, namespace != version.envelopeNamespace {
            throw SOAPRequestError(
                version: version,
                fault: .client("unknown operation '\(wrapper.name)' in namespace '\(namespace)'"))
        }
        guard let operation = service.operation(named: wrapper.name) else {
            throw SOAPRequestError(version: version, fault: .client("unknown operation '\(wrapper.name)'"))
        }
        do {
            let streamed = operation.streamedList.map { SchemaDecoder.StreamedList(path: $0.joined(separator: "/"), values: list) }
            let parameters = try SchemaDecoder(streamed: streamed).decode(wrapper, as: operation.request, path: "")
            return SOAPRequest(version: version, operation: operation, parameters: parameters, streamedList: streamed?.values ?? [])
        } catch {
            throw SOAPRequestError(version: version, fault: error)
        }
    }

    /// Encodes a request (used by our SOAP client and by tests).
    package func encodeRequest(_ operation: OperationDescription, parameters: SOAPRecord, version: SOAPVersion = .soap11) -> Data {
        let document = DocumentWriter()
        document += envelopeOpening(version) + "<ns2:\(operation.name) xmlns:ns2=\"\(service.targetNamespace)\">"
        SchemaEncoder().encode(parameters, as: operation.request, into: document)
        document += "</ns2:\(operation.name)>" + Self.envelopeClosing
        return document.take()
    }

    // MARK: Responses

    /// Encodes an operation's response wrapping `result` as its `return` element.
    package func encodeResponse(_ operation: OperationDescription, result: SOAPRecord, version: SOAPVersion) -> Data {
        // Written straight into the bytes sent: an answer with a million recipients' states is
        // tens of megabytes.
        let name = operation.response.name
        let document = DocumentWriter(capacity: 1024 + SchemaEncoder.sizeEstimate(result))
        document += envelopeOpening(version) + "<ns2:\(name) xmlns:ns2=\"\(service.targetNamespace)\">"
        SchemaEncoder().encode(SOAPRecord(["return": [.record(result)]]), as: operation.response, into: document)
        document += "</ns2:\(name)>" + Self.envelopeClosing
        return document.take()
    }

    /// Decodes a response to `operation` and returns its `return` record (empty if absent).
    /// A fault in the response is thrown as a ``SOAPFault`` carrying the remote reason.
    package func decodeResponse(_ body: Data, for operation: OperationDescription) throws(SOAPFault) -> SOAPRecord {
        let root: XMLElementNode
        do {
            root = try parser.parse(body)
        } catch {
            throw .server("unreadable response: \(error.description)")
        }
        let wrapper: XMLElementNode
        do {
            wrapper = try envelopeContent(root, fallbackVersion: .soap11).wrapper
        } catch {
            throw .server("unreadable response: \(error.fault.reason)")
        }
        if wrapper.name == "Fault" {
            throw faultReason(wrapper)
        }
        guard wrapper.name == operation.response.name else {
            throw .server("expected '\(operation.response.name)', got '\(wrapper.name)'")
        }
        let record = try SchemaDecoder().decode(Self.unwrappedReturn(wrapper, for: operation), as: operation.response, path: "")
        return record.record("return") ?? SOAPRecord()
    }

    /// Services generated from other WSDLs answer a one-field result directly in `return`
    /// (`<return>true</return>`) instead of in its named child
    /// (`<return><authorized>true</authorized></return>`); both are accepted (CONTRACT §3).
    static func unwrappedReturn(_ wrapper: XMLElementNode, for operation: OperationDescription) -> XMLElementNode {
        guard case .complex(let returnType)? = operation.response.fields.first(where: { $0.name == "return" })?.type,
              returnType.fields.count == 1, let field = returnType.fields.first
        else { return wrapper }
        var normalized = wrapper
        for index in normalized.children.indices where normalized.children[index].name == "return" {
            let bare = normalized.children[index]
            guard bare.children.isEmpty, !bare.isNil else { continue }
            normalized.children[index].children = [XMLElementNode(name: field.name, text: bare.text)]
            normalized.children[index].text = ""
        }
        return normalized
    }

    /// Encodes a fault.
    package func encodeFault(_ fault: SOAPFault, version: SOAPVersion) -> Data {
        let code = fault.code.qualifiedName(for: version)
        let reason = XMLEscaping.escape(fault.reason)
        // A declared fault travels as its element in the detail, JAX-WS style.
        let detail = fault.detail.map {
            "<ns2:\($0) xmlns:ns2=\"\(service.targetNamespace)\"><message>\(reason)</message></ns2:\($0)>"
        }
        let body: String
        switch version {
        case .soap11:
            body = "<soap:Fault><faultcode>\(code)</faultcode><faultstring>\(reason)</faultstring>"
                + (detail.map { "<detail>\($0)</detail>" } ?? "") + "</soap:Fault>"
        case .soap12:
            body = "<soap:Fault><soap:Code><soap:Value>\(code)</soap:Value></soap:Code>"
                + "<soap:Reason><soap:Text xml:lang=\"en\">\(reason)</soap:Text></soap:Reason>"
                + (detail.map { "<soap:Detail>\($0)</soap:Detail>" } ?? "") + "</soap:Fault>"
        }
        return envelope(body, version: version)
    }

    // MARK: Envelope

    private func envelope(_ body: String, version: SOAPVersion) -> Data {
        Data((envelopeOpening(version) + body + Self.envelopeClosing).utf8)
    }

    private func envelopeOpening(_ version: SOAPVersion) -> String {
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><soap:Envelope xmlns:soap=\"\(version.envelopeNamespace)\"><soap:Body>"
    }

    private static let envelopeClosing = "</soap:Body></soap:Envelope>"

    private func envelopeContent(_ root: XMLElementNode, fallbackVersion: SOAPVersion) throws(SOAPRequestError) -> (version: SOAPVersion, wrapper: XMLElementNode) {
        guard root.name == "Envelope", let version = SOAPVersion(envelopeNamespace: root.namespace) else {
            throw SOAPRequestError(
                version: fallbackVersion,
                fault: .client("the root element must be a SOAP 1.1 or 1.2 Envelope, got '\(root.name)'"))
        }
        let bodies = root.children.filter { $0.name == "Body" && $0.namespace == version.envelopeNamespace }
        guard bodies.count == 1, let body = bodies.first else {
            throw SOAPRequestError(version: version, fault: .client("the Envelope must contain exactly one Body"))
        }
        guard body.children.count == 1, let wrapper = body.children.first else {
            throw SOAPRequestError(
                version: version,
                fault: .client("the Body must contain exactly one operation element, found \(body.children.count)"))
        }
        return (version, wrapper)
    }

    private func faultReason(_ fault: XMLElementNode) -> SOAPFault {
        let detail = (fault.children(named: "detail").first ?? fault.children(named: "Detail").first)?.children.first?.name
        if let text = fault.children(named: "faultstring").first?.text {
            return SOAPFault(.server, text, detail: detail)
        }
        if let text = fault.children(named: "Reason").first?.children(named: "Text").first?.text {
            return SOAPFault(.server, text, detail: detail)
        }
        return SOAPFault(.server, "the peer answered with a SOAP fault", detail: detail)
    }
}
