import BankContract
import Foundation
import PigeonDomain
import PigeonCore
import PigeonHTTP
import SOAPCodec

/// `GET /pigeon/services/SBIOutbound?wsdl`: the WSDL of the service the bank proxy implements,
/// generated from the description our client uses, so a bank can generate its side from it. Its
/// address is `sbiOutboundWebServiceURL` when configured.
package struct OutboundWSDL: Sendable {
    package static let path = "/pigeon/services/SBIOutbound"
    package static let placeholderAddress = "http://bank.invalid/sbi-outbound/services/SBIOutbound"

    package let bankProxyURL: String?
    private let wsdl = WSDLGenerator(service: OutboundService.description)

    package init(bankProxyURL: String?) {
        self.bankProxyURL = bankProxyURL
    }

    package func response() -> HTTPResponse {
        .text(200, wsdl.wsdl(address: bankProxyURL.map(Redaction.withoutCredentials) ?? Self.placeholderAddress), contentType: "text/xml; charset=utf-8")
    }
}
