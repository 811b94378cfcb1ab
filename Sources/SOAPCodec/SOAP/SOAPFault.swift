/// A SOAP Fault: the sender's mistake (`Client` in SOAP 1.1, `Sender` in 1.2) or ours
/// (`Server` / `Receiver`). The reason is safe to show to the caller.
package struct SOAPFault: Error, Equatable, CustomStringConvertible {
    package enum Code: Sendable, Equatable {
        case client
        case server

        func qualifiedName(for version: SOAPVersion) -> String {
            switch (self, version) {
            case (.client, .soap11): "soap:Client"
            case (.server, .soap11): "soap:Server"
            case (.client, .soap12): "soap:Sender"
            case (.server, .soap12): "soap:Receiver"
            }
        }
    }

    package var code: Code
    package var reason: String
    /// The declared fault this is (a fault element of the service, such as
    /// `BankClientNotExistsException`), carried in the fault's detail.
    package var detail: String?

    package init(_ code: Code, _ reason: String, detail: String? = nil) {
        self.code = code
        self.reason = reason
        self.detail = detail
    }

    /// A fault caused by the request.
    package static func client(_ reason: String) -> SOAPFault { SOAPFault(.client, reason) }

    /// A fault on the answering side.
    package static func server(_ reason: String) -> SOAPFault { SOAPFault(.server, reason) }

    package var description: String { "\(code == .client ? "Client" : "Server") fault: \(reason)" }
}
