import Foundation
import PigeonHTTP

/// An HTTPS listener's certificate and key files as configured: what the listener reads at
/// start, a SIGHUP reload reads again and `check-config` checks.
package struct ListenerTLSFiles: Sendable {
    /// `public` or `bank`: the metrics' `listener` label.
    package let listener: String
    /// The key of the listener's address as operators know it: `listen` or `bankListen`.
    package let addressKey: String
    /// The key naming the certificate file, for errors.
    package let certificateKey: String
    package let certificatePath: String
    package let keyPath: String

    /// Both files' PEM text; the error names the key and the file.
    package func read() throws(ConfigurationError) -> (certificatePEM: String, keyPEM: String) {
        (try text(certificatePath), try text(keyPath))
    }

    private func text(_ path: String) throws(ConfigurationError) -> String {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigurationError(location: certificateKey, message: "cannot read \(path): \(error.localizedDescription)")
        }
        // PEM is ASCII text; a DER file (binary) or anything else is named as such.
        guard let text = String(data: data, encoding: .utf8), !text.contains("\0") else {
            throw ConfigurationError(location: certificateKey, message: "\(path) is not PEM text (a binary DER file? convert it with openssl x509 -inform DER / openssl pkey -inform DER)")
        }
        return text
    }
}

extension GatewayConfiguration {
    /// The listeners served over HTTPS, with their files.
    package var tlsListeners: [ListenerTLSFiles] {
        var listeners: [ListenerTLSFiles] = []
        if let certificate = http.tlsCertificatePath, let key = http.tlsKeyPath {
            listeners.append(.init(listener: "public", addressKey: "listen", certificateKey: "tlsCertificatePath", certificatePath: certificate, keyPath: key))
        }
        if http.bank != nil, let certificate = http.bankTlsCertificatePath, let key = http.bankTlsKeyPath {
            listeners.append(.init(listener: "bank", addressKey: "bankListen", certificateKey: "bankTlsCertificatePath", certificatePath: certificate, keyPath: key))
        }
        return listeners
    }

    /// Reads each HTTPS listener's certificate and key as the listener (and a SIGHUP reload)
    /// will, and describes them in lines for `pigeon check-config`: run before `systemctl
    /// reload`, it catches a renewed pair that would be refused.
    package func checkListenerCertificates(now: Date = Date()) throws(ConfigurationError) -> [String] {
        try tlsListeners.map { files throws(ConfigurationError) in
            let pair = try files.read()
            let validity: HTTPServer.CertificateValidity
            do {
                validity = try HTTPServer.checkCertificate(certificatePEM: pair.certificatePEM, keyPEM: pair.keyPEM)
            } catch {
                throw ConfigurationError(location: files.certificateKey, message: "\(files.certificatePath) with its key \(files.keyPath): \(error)")
            }
            let expiry = validity.notAfter
            let when = ISO8601DateFormatter().string(from: expiry)
            // A reload refuses a certificate not valid now (expired or not yet valid), so the check fails on it too.
            if let problem = validity.problem(at: now) {
                throw ConfigurationError(location: files.certificateKey, message: "\(files.certificatePath): \(problem)")
            }
            let days = Int(expiry.timeIntervalSince(now) / 86_400)
            return "\(files.addressKey): HTTPS, certificate \(files.certificatePath) valid until \(when) (\(days) days)"
        }
    }
}
