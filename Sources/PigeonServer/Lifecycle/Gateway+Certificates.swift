import Foundation
import PigeonConfiguration
import PigeonCore
import PigeonHTTP

/// An HTTPS listener and the files its certificate is read from, for reloading them in place.
struct ListenerCertificate: Sendable {
    let files: ListenerTLSFiles
    let server: HTTPServer
}

extension Gateway {
    /// What a reload did for one HTTPS listener.
    package struct CertificateReload: Sendable, Equatable {
        /// `public` or `bank`.
        package var listener: String
        /// When the certificate now presented expires; nil when the new files were refused.
        package var expiry: Date?
        /// Why the new files were refused (the listener keeps the certificate it had).
        package var error: String?
    }

    /// Reads each HTTPS listener's certificate and key files again (`tlsCertificatePath` and
    /// `tlsKeyPath`, `bankTlsCertificatePath` and `bankTlsKeyPath`) and presents them to new
    /// connections; open connections keep theirs, nothing stops listening. A pair that cannot be
    /// read or parsed, whose key is not the certificate's, or whose certificate is not valid at
    /// `now` (expired, or not yet valid) is refused with the reason logged, and that listener keeps its certificate. What SIGHUP (`systemctl reload`) does, so a
    /// renewed certificate needs no restart. The bank's client CA (`bankClientCaFile`) is read
    /// at start only.
    @discardableResult
    package func reloadCertificates(now: Date = Date()) -> [CertificateReload] {
        listenerCertificates.map { source in
            let files = source.files
            do {
                let pair = try files.read()
                let validity = try HTTPServer.checkCertificate(certificatePEM: pair.certificatePEM, keyPEM: pair.keyPEM)
                if let problem = validity.problem(at: now) { throw UnusableCertificate(description: problem) }
                try source.server.replaceCertificate(certificatePEM: pair.certificatePEM, keyPEM: pair.keyPEM)
                let expiry = source.server.certificateExpiry
                logger.notice("TLS certificate reloaded", metadata: [
                    "listener": files.listener, "certificate": files.certificatePath,
                    "expires": expiry.map { ISO8601DateFormatter().string(from: $0) } ?? "unknown"])
                return CertificateReload(listener: files.listener, expiry: expiry, error: nil)
            } catch {
                logger.error("TLS certificate not reloaded; the listener keeps the one it has", metadata: [
                    "listener": files.listener, "certificate": files.certificatePath, "reason": "\(error)"])
                return CertificateReload(listener: files.listener, expiry: nil, error: "\(error)")
            }
        }
    }
}

/// A certificate not valid now (expired, or not yet valid), refused by a reload.
struct UnusableCertificate: Error, CustomStringConvertible {
    var description: String
}
