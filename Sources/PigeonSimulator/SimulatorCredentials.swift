import Foundation
import PigeonCore

/// Everything a gateway needs to talk to the simulator, made once with the openssl command line
/// into a folder: a CA, the server certificate (127.0.0.1 and localhost), a client `.p12` for
/// APNs certificate authentication, an APNs `.p8` token key, and an FCM service-account JSON.
package struct SimulatorCredentials: Sendable {
    package static let keyId = "SIMKEY0001"
    package static let teamId = "SIMTEAM001"
    package static let topic = "com.example.bank"
    package static let projectId = "pigeon-simulator"
    package static let clientEmail = "pigeon@pigeon-simulator.iam.gserviceaccount.com"
    package static let p12Password = "pigeon"
    /// RuStore's project id and static service token as the simulator expects them.
    package static let rustoreProjectId = "sim-rustore-project"
    package static let rustoreServiceToken = "sim-rustore-service-token"
    /// Huawei Push Kit's app id and client secret as the simulator expects them.
    package static let hmsAppId = "100000001"
    package static let hmsClientSecret = "sim-hms-client-secret"
    /// The contact a gateway names in its VAPID tokens when run against the simulator.
    package static let vapidSubject = "mailto:operator@example.com"

    package let folder: URL

    package var caFile: String { path("ca.pem") }
    package var serverCertificate: String { path("server.pem") }
    package var serverKey: String { path("server.key") }
    package var clientP12: String { path("client.p12") }
    /// The same client certificate and its key as PEM files (signed by the simulator's CA).
    package var clientCertificate: String { path("client.pem") }
    package var clientKey: String { path("client.key") }
    package var apnsKey: String { path("AuthKey_\(Self.keyId).p8") }
    package var serviceAccount: String { path("service-account.json") }
    /// A VAPID key for the gateway (the application server's P-256 key, PEM).
    package var vapidKey: String { path("vapid.pem") }

    /// Why credentials could not be made.
    package struct GenerationError: Error, CustomStringConvertible {
        package var description: String
    }

    /// Uses the credentials in `folder`, making any that are missing.
    package init(folder: URL, tokenURL: @autoclosure () -> String) throws {
        self.folder = folder
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if !exists("ca.pem") {
            try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("ca.key"),
                         "-out", path("ca.pem"), "-days", "3650", "-subj", "/CN=Pigeon Simulator CA"])
        }
        if !exists("server.pem") {
            try Data("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n".utf8).write(to: url("server.ext"))
            try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("server.key"),
                         "-out", path("server.csr"), "-subj", "/CN=localhost"])
            try openssl(["x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"), "-CAcreateserial",
                         "-out", path("server.pem"), "-days", "825", "-extfile", path("server.ext")])
        }
        if !exists("client.p12") {
            try openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", path("client.key"), "-out", path("client.csr"),
                         "-subj", "/CN=Apple Push Services: \(Self.topic)/UID=\(Self.topic)"])
            try openssl(["x509", "-req", "-in", path("client.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"), "-CAcreateserial",
                         "-out", path("client.pem"), "-days", "825"])
            try openssl(["pkcs12", "-export", "-in", path("client.pem"), "-inkey", path("client.key"), "-out", path("client.p12"),
                         "-passout", "pass:\(Self.p12Password)"])
        }
        if !exists("AuthKey_\(Self.keyId).p8") {
            try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", apnsKey])
        }
        if !exists("vapid.pem") {
            try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", vapidKey])
        }
        if !exists("service-account.json") {
            try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path("fcm.key")])
            let key = try String(contentsOfFile: path("fcm.key"), encoding: .utf8)
            let json: [String: Any] = [
                "type": "service_account", "project_id": Self.projectId, "private_key_id": "simulator-key-1",
                "private_key": key, "client_email": Self.clientEmail, "token_uri": tokenURL(),
            ]
            let data = try JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted, .sortedKeys])
            guard FileManager.default.createFile(atPath: serviceAccount, contents: data, attributes: [.posixPermissions: 0o600]) else {
                throw GenerationError(description: "cannot write \(serviceAccount)")
            }
        }
        // Private keys and what holds them are readable by their owner only, whoever made them.
        for name in Self.secretFiles where exists(name) {
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path(name))
        }
    }

    /// The files holding private keys (mode 0600).
    package static let secretFiles = ["ca.key", "server.key", "client.key", "client.p12", "AuthKey_\(keyId).p8", "fcm.key", "service-account.json", "vapid.pem"]

    private func url(_ name: String) -> URL { folder.appendingPathComponent(name) }
    private func path(_ name: String) -> String { url(name).path }
    private func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: path(name)) }

    private func openssl(_ arguments: [String]) throws {
        let outcome: ProgramRun.Outcome
        do {
            outcome = try ProgramRun.run("/usr/bin/openssl", arguments, errorsToOutput: true)
        } catch {
            throw GenerationError(description: "cannot run openssl (install the openssl package): \(error)")
        }
        guard outcome.status == 0 else {
            throw GenerationError(description: "openssl \(arguments.first ?? "") failed: \(String(decoding: outcome.output, as: UTF8.self).prefix(300))")
        }
    }
}
