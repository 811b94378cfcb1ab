import Foundation
import PigeonCore
import PigeonHTTP

/// An HTTPS listener and the files its certificate is read from, for reloading them in place.
struct ListenerCertificate: Sendable {
    /// `public` (`listen`) or `bank` (`bankListen`), as in the metrics' `listener` label.
    let listener: String
    let server: HTTPServer
    let certificatePath: String
    let keyPath: String
}

extension Gateway {
    /// What a reload did for one HTTPS listener.
    public struct CertificateReload: Sendable, Equatable {
        /// `public` or `bank`.
        public var listener: String
        /// When the certificate now presented expires; nil when the new files were refused.
        public var expiry: Date?
        /// Why the new files were refused (the listener keeps the certificate it had).
        public var error: String?
    }

    /// Reads each HTTPS listener's certificate and key files again (`tlsCertificatePath` and
    /// `tlsKeyPath`, `bankTlsCertificatePath` and `bankTlsKeyPath`) and presents them to new
    /// connections; open connections keep theirs, nothing stops listening. A pair that cannot be
    /// read or parsed, or whose key is not the certificate's, is refused with the reason logged,
    /// and that listener keeps its certificate. What SIGHUP (`systemctl reload`) does, so a
    /// renewed certificate needs no restart. The bank's client CA (`bankClientCaFile`) is read
    /// at start only.
    @discardableResult
    public func reloadCertificates() -> [CertificateReload] {
        listenerCertificates.map { source in
            do {
                let certificate = try Self.readFile(source.certificatePath)
                let key = try Self.readFile(source.keyPath)
                try source.server.replaceCertificate(certificatePEM: certificate, keyPEM: key)
                let expiry = source.server.certificateExpiry
                logger.notice("TLS certificate reloaded", metadata: [
                    "listener": source.listener, "certificate": source.certificatePath,
                    "expires": expiry.map { ISO8601DateFormatter().string(from: $0) } ?? "unknown"])
                return CertificateReload(listener: source.listener, expiry: expiry, error: nil)
            } catch {
                logger.error("TLS certificate not reloaded; the listener keeps the one it has", metadata: [
                    "listener": source.listener, "certificate": source.certificatePath, "reason": "\(error)"])
                return CertificateReload(listener: source.listener, expiry: nil, error: "\(error)")
            }
        }
    }

    private static func readFile(_ path: String) throws -> String {
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw StartError(description: "cannot read \(path): \(error.localizedDescription)")
        }
    }
}
