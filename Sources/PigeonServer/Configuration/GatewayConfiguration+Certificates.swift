import Foundation
import PigeonHTTP

extension GatewayConfiguration {
    /// Reads each HTTPS listener's certificate and key as the listener (and a SIGHUP reload)
    /// will, and describes them in lines for `pigeon check-config`: run before `systemctl
    /// reload`, it catches a renewed pair that would be refused.
    public func checkListenerCertificates(now: Date = Date()) throws(ConfigurationError) -> [String] {
        var listeners = [("listen", "tlsCertificatePath", http.tlsCertificatePath, http.tlsKeyPath)]
        if let bank = http.bank {
            listeners.append(("bankListen", "bankTlsCertificatePath", bank.tlsCertificatePath, bank.tlsKeyPath))
        }
        var lines: [String] = []
        for (listener, key, certificatePath, keyPath) in listeners {
            guard let certificatePath, let keyPath else { continue }
            let expiry: Date
            do {
                let certificate = try String(contentsOfFile: certificatePath, encoding: .utf8)
                let privateKey = try String(contentsOfFile: keyPath, encoding: .utf8)
                expiry = try HTTPServer.checkCertificate(certificatePEM: certificate, keyPEM: privateKey)
            } catch {
                throw ConfigurationError(location: key, message: "\(certificatePath) with its key \(keyPath): \(error)")
            }
            let days = Int(expiry.timeIntervalSince(now) / 86_400)
            let when = ISO8601DateFormatter().string(from: expiry)
            lines.append("\(listener): HTTPS, certificate \(certificatePath) "
                         + (expiry < now ? "EXPIRED at \(when)" : "valid until \(when) (\(days) days)"))
        }
        return lines
    }
}
