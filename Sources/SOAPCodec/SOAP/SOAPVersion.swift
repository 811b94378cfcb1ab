/// SOAP 1.1 or 1.2: envelope namespace, content type and fault codes differ.
package enum SOAPVersion: Sendable, Equatable {
    case soap11
    case soap12

    package var envelopeNamespace: String {
        switch self {
        case .soap11: "http://schemas.xmlsoap.org/soap/envelope/"
        case .soap12: "http://www.w3.org/2003/05/soap-envelope"
        }
    }

    /// The Content-Type of messages in this version.
    package var contentType: String {
        switch self {
        case .soap11: "text/xml; charset=utf-8"
        case .soap12: "application/soap+xml; charset=utf-8"
        }
    }

    /// The version an envelope namespace belongs to.
    package init?(envelopeNamespace: String?) {
        switch envelopeNamespace {
        case SOAPVersion.soap11.envelopeNamespace: self = .soap11
        case SOAPVersion.soap12.envelopeNamespace: self = .soap12
        default: return nil
        }
    }

    /// The version a request's Content-Type suggests (used to answer requests too broken to parse).
    package init(contentType: String?) {
        let mediaType = contentType?.prefix { $0 != ";" }.lowercased() ?? ""
        self = mediaType.hasSuffix("application/soap+xml") ? .soap12 : .soap11
    }
}
