import Foundation

/// A configuration that is valid but exposes something in clear or without a credential to
/// other machines: the gateway starts, and says so at warning level (and `check-config` prints it).
package struct ExposureWarning: Sendable, Equatable {
    package var message: String
    /// The address concerned, `host:port` or a host.
    package var address: String
}

extension GatewayConfiguration {
    /// What the configured listeners expose beyond this machine without TLS or authentication.
    package var exposureWarnings: [ExposureWarning] {
        var warnings: [ExposureWarning] = []
        let listeners = Set(tlsListeners.map(\.listener))
        if !listeners.contains("public") && !Self.isLoopback(http.host) {
            warnings.append(ExposureWarning(
                message: "listen serves plain HTTP on an address other machines reach: set tlsCertificatePath/tlsKeyPath, or keep it behind a TLS-terminating proxy on this machine",
                address: "\(http.host):\(http.port)"))
        }
        if let bank = http.bank, !listeners.contains("bank"), !Self.isLoopback(bank.host) {
            warnings.append(ExposureWarning(
                message: "bankListen serves plain HTTP on an address other machines reach: set bankTlsCertificatePath/bankTlsKeyPath (and bankClientCaFile)",
                address: "\(bank.host):\(bank.port)"))
        }
        if http.soapIsUnauthenticated && !Self.isLoopback(http.soapHost) {
            warnings.append(ExposureWarning(message: "the SOAP service accepts unauthenticated calls (soapAuthentication = none)", address: http.soapHost))
        }
        return warnings
    }
}
