import Foundation
import PigeonDomain
import PigeonCrypto
import PushTransport

extension GatewayConfiguration {
    /// Reads every app's push credentials as the gateway will (the APNs signing key, the FCM
    /// service account) and describes each app in a line for `pigeon check-config`; throws on
    /// the first that cannot be read.
    package func checkPushApps() throws(ConfigurationError) -> [String] {
        try pushApps.map { (id, app) throws(ConfigurationError) -> String in
            let name = PushRoute(platform: .ios, appId: id).appLabel
            let prefix = id.isEmpty ? "" : "app.\(id)."
            var services: [String] = []
            let apns = app.apns
            if let keyPath = apns.keyPath, let keyId = apns.keyId, let teamId = apns.teamId {
                do {
                    _ = try APNsSigningCredentials(p8PEM: try String(contentsOfFile: keyPath, encoding: .utf8), keyId: keyId, teamId: teamId)
                } catch {
                    throw ConfigurationError(location: "\(prefix)apnsKeyPath", message: "cannot use the APNs signing key '\(keyPath)': \(error)")
                }
                services.append("APNs (key \(keyId), topic \(apns.topic ?? "none"); production \(apns.resolvedEndpoint), sandbox \(apns.resolvedSandboxEndpoint))")
            } else if apns.certificatePath != nil {
                services.append("APNs (certificate, topic \(apns.topic ?? "from the certificate"); production \(apns.resolvedEndpoint), sandbox \(apns.resolvedSandboxEndpoint))")
            }
            if let accountPath = app.fcm.serviceAccountPath {
                let account: ServiceAccount
                do {
                    account = try ServiceAccount(json: try Data(contentsOf: URL(fileURLWithPath: accountPath)))
                } catch {
                    throw ConfigurationError(location: "\(prefix)fcmServiceAccountPath", message: "cannot use the FCM service account '\(accountPath)': \(error)")
                }
                services.append("FCM (project \(account.projectId))")
            }
            if let project = app.rustore.projectId, app.rustore.isConfigured {
                services.append("RuStore (project \(project), \(app.rustore.resolvedEndpoint))")
            }
            if let appId = app.huawei.appId, app.huawei.isConfigured {
                services.append("Huawei Push Kit (app \(appId), \(app.huawei.resolvedEndpoint))")
            }
            if let keyPath = app.webPush.vapidPrivateKeyPath {
                let signer: VAPIDSigner
                do {
                    signer = try VAPIDSigner(key: PrivateKey(pem: String(contentsOfFile: keyPath, encoding: .utf8)), subject: app.webPush.vapidSubject ?? "")
                } catch {
                    throw ConfigurationError(location: "\(prefix)vapidPrivateKeyPath", message: "cannot use the VAPID key '\(keyPath)' (a PEM P-256 private key): \(error)")
                }
                services.append("Web Push (VAPID public key \(signer.applicationServerKey), hosts \(app.webPush.allowedHosts.patterns.joined(separator: ",")))")
            }
            return "app \(name): " + (services.isEmpty ? "no push service" : services.joined(separator: ", "))
        }
    }
}
