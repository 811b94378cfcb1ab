import Foundation
import PigeonDomain
import PigeonCrypto

extension GatewayConfiguration {
    /// Wallet passes (CONTRACT §7).
    package struct Passes: Sendable {
        /// `passWebServicePath`: where Apple's web service is served on `listen`; the pass's
        /// `webServiceURL` is `https://<public host><this path>`. Default `/passkit`.
        package var webServicePath = "/passkit"
        /// `passFetchTimeoutSeconds`: how long a device has to fetch after an update push. Default 600.
        package var fetchTimeoutSeconds = 600
        /// `passFetchRetries`: pushes after the first when no fetch comes. Default 3.
        package var fetchRetries = 3
        /// `passRegistrationsPerDevice`: passes one Wallet may register for. Default 500.
        package var registrationsPerDevice = 500
        /// `passRegistrationsPerPass`: Wallets one pass may be registered on. Default 20.
        package var registrationsPerPass = 20
        /// `passRequestsPerAddressPerMinute`: web-service calls per client address. Default 600.
        package var requestsPerAddressPerMinute = 600
        /// `passType.<passTypeIdentifier>.certificatePath` / `.password`: the Pass Type ID
        /// certificate (`.p12`) each pass type's update pushes are signed with.
        package var certificates: [String: PassTypeCertificate] = [:]
        /// `passWwdrCertificatePath`: Apple's WWDR intermediate (PEM), included in the
        /// signatures of passes the gateway signs (unless the `.p12` carries it).
        package var wwdrCertificatePath: String?

        /// A signer per pass type with a certificate (passes sent as `passJson` are signed).
        package func signers() throws -> [String: PassSigner] {
            let wwdr = try wwdrCertificatePath.map { try String(contentsOfFile: $0, encoding: .utf8) }
            var signers: [String: PassSigner] = [:]
            for (identifier, certificate) in certificates {
                guard let path = certificate.path else { continue }
                do {
                    signers[identifier] = try PassSigner(p12: try Data(contentsOf: URL(fileURLWithPath: path)), password: certificate.password,
                                                         intermediatesPEM: wwdr)
                } catch {
                    throw ConfigurationError(location: "passType.\(identifier).certificatePath", message: "\(error)")
                }
            }
            return signers
        }
    }

    /// A Pass Type ID certificate for APNs (a `.p12` and its password).
    package struct PassTypeCertificate: Sendable {
        package var path: String?
        package var password: String?
    }

    /// Opens every pass type's certificate (and the WWDR certificate) as signing will, and
    /// describes the Wallet set-up in lines for `pigeon check-config`.
    package func checkPasses() throws(ConfigurationError) -> [String] {
        let signers: [String: PassSigner]
        do {
            signers = try passes.signers()
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(location: "passWwdrCertificatePath", message: "cannot read: \(error)")
        }
        var lines = ["wallet passes: web service at \(passes.webServicePath) on listen, fetch wait \(passes.fetchTimeoutSeconds) s, \(passes.fetchRetries) re-pushes; "
                     + (apns.keyPath != nil ? "pass types without a certificate are pushed with the .p8 key \(apns.keyId ?? "")" : "pass types without a certificate cannot be pushed (no apnsKeyPath)")]
        for identifier in signers.keys.sorted() {
            lines.append("pass type \(identifier): certificate \(passes.certificates[identifier]?.path ?? "") (pushes, signs passes sent as passJson\(passes.wwdrCertificatePath == nil ? "; no passWwdrCertificatePath: the .p12 must carry the WWDR certificate" : ""))")
        }
        return lines
    }

    /// `passType.<passTypeIdentifier>.<key> = value`.
    mutating func applyPassTypeKey(_ key: String, value: String, location: String) throws(ConfigurationError) {
        // The identifier itself has dots (pass.com.example.card): the key is the last part.
        // "passType.x" has only the prefix's dot (found by fuzzing: the identifier's range ran backwards).
        let rest = key.dropFirst("passType.".count)
        guard key.hasPrefix("passType."), let lastDot = rest.lastIndex(of: ".") else {
            throw ConfigurationError(location: location, message: "'\(key)' must be passType.<passTypeIdentifier>.certificatePath or .password")
        }
        let identifier = String(rest[..<lastDot])
        let name = String(key[key.index(after: lastDot)...])
        if let problem = PassFields.identifierProblem(identifier, name: "the pass type identifier") {
            throw ConfigurationError(location: location, message: "'\(key)': \(problem)")
        }
        guard !value.isEmpty else { throw ConfigurationError(location: location, message: "\(key): must not be empty") }
        var certificate = passes.certificates[identifier] ?? PassTypeCertificate()
        switch name {
        case "certificatePath": certificate.path = value
        case "password": certificate.password = value
        default:
            throw ConfigurationError(location: location, message: "unknown key '\(name)' for pass type '\(identifier)'; a pass type takes certificatePath and password")
        }
        passes.certificates[identifier] = certificate
    }

    /// The pass types' certificates readable and complete; a web-service path that can be a URL's.
    func validatePasses(location: String) throws(ConfigurationError) {
        func fail(_ message: String) -> ConfigurationError { ConfigurationError(location: location, message: message) }
        for (identifier, certificate) in passes.certificates.sorted(by: { $0.key < $1.key }) {
            guard let path = certificate.path else {
                throw fail("passType.\(identifier).password is set but passType.\(identifier).certificatePath is not")
            }
            if let problem = unreadableFile(key: "passType.\(identifier).certificatePath", path: path, location: location) { throw problem }
        }
        if let path = passes.wwdrCertificatePath, let problem = unreadableFile(key: "passWwdrCertificatePath", path: path, location: location) {
            throw problem
        }
    }

    static func passWebServicePath(_ value: String) throws(ValueError) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_/.")
        var path = value
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        guard path.hasPrefix("/"), path.count > 1, path.count <= 100, path.allSatisfy(allowed.contains), !path.contains("//"),
              !path.split(separator: "/").contains(where: { $0 == "." || $0 == ".." })
        else {
            throw ValueError(message: "'\(value)' must be a path like /passkit (letters, digits, - _ . /)")
        }
        guard !path.hasPrefix("/api/"), path != "/api", path != "/health" else {
            throw ValueError(message: "'\(value)' is taken by the device API or /health")
        }
        return path
    }
}
