/// A SOAP Fault: the sender's mistake (`Client` in SOAP 1.1, `Sender` in 1.2) or ours
/// (`Server` / `Receiver`). The reason is safe to show to the caller.
public struct SOAPFault: Error, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
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

    public var code: Code
    public var reason: String
    /// The declared fault this is (a fault element of the service, such as
    /// `BankClientNotExistsException`), carried in the fault's detail.
    public var detail: String?

    public init(_ code: Code, _ reason: String, detail: String? = nil) {
        self.code = code
        self.reason = reason
        self.detail = detail
    }

    /// A fault caused by the request.
    public static func client(_ reason: String) -> SOAPFault { SOAPFault(.client, reason) }

    /// A fault on the answering side.
    public static func server(_ reason: String) -> SOAPFault { SOAPFault(.server, reason) }

    public var description: String { "\(code == .client ? "Client" : "Server") fault: \(reason)" }
}
