import Foundation
import PigeonCrypto
import PigeonDecryptor
import Synchronization

/// The simulated phones' keys for confidential notifications (CONTRACT §8): a key per push token
/// (or Web Push subscription id), made here or given by a test, so that `/simulator/pushes` shows
/// what each push opens to on its phone — the code arriving at the phone and nowhere else.
///
/// `POST /simulator/devices/keys` `{"token", "keyId"?}` makes a key and answers the
/// `encryptionKey` member for the app's registration; `{"token", "keyId", "privateKey",
/// "publicKey"}` (base64url) holds a key made elsewhere.
package final class DeviceKeyring: Sendable {
    private let decryptors = Mutex<[String: ConfidentialDecryptor]>([:])
    /// At most this many keys are held; the simulator is a test tool, not a store.
    static let capacity = 100_000

    package init() {}

    /// Makes (or holds) the key of `token`; returns the registration's `encryptionKey` member.
    package func handleAdmin(_ body: Data) -> (status: Int, body: String) {
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any],
              let token = object["token"] as? String, !token.isEmpty, token.utf8.count <= 4096 else {
            return (400, #"{"error":"expected {\"token\", \"keyId\"?, \"privateKey\"?, \"publicKey\"?}"}"#)
        }
        let keyId = object["keyId"] as? String ?? "sim-\(UUID().uuidString.prefix(8).lowercased())"
        do {
            let scalar: Data, point: Data
            if let privateText = object["privateKey"] as? String, let publicText = object["publicKey"] as? String {
                guard let given = Base64URL.decode(privateText), let givenPoint = Base64URL.decode(publicText) else {
                    return (400, #"{"error":"privateKey and publicKey are base64url"}"#)
                }
                (scalar, point) = (given, givenPoint)
            } else {
                let key = try P256PrivateKey()
                (scalar, point) = (try key.privateScalar, try key.publicPoint)
            }
            let decryptor = try ConfidentialDecryptor(keyId: keyId, privateKey: scalar, publicKey: point)
            let held = decryptors.withLock { keys in
                guard keys.count < Self.capacity || keys[token] != nil else { return false }
                keys[token] = decryptor
                return true
            }
            guard held else { return (503, #"{"error":"the simulator holds its maximum of device keys"}"#) }
            let member = ["keyId": keyId, "publicKey": Base64URL.encode(point)]
            let answer = try JSONSerialization.data(withJSONObject: ["token": token, "encryptionKey": member], options: [.sortedKeys])
            return (201, String(decoding: answer, as: UTF8.self))
        } catch {
            return (400, #"{"error":"unusable key"}"#)
        }
    }

    /// Makes a key for the phone of `token` (as `POST /simulator/devices/keys` does); returns
    /// its id and public point, the registration's `encryptionKey`.
    package func makeKey(token: String, keyId: String) throws -> (keyId: String, publicKey: Data) {
        let key = try P256PrivateKey()
        let point = try key.publicPoint
        let decryptor = try ConfidentialDecryptor(keyId: keyId, privateKey: try key.privateScalar, publicKey: point)
        decryptors.withLock { $0[token] = decryptor }
        return (keyId, point)
    }

    /// What a recorded push opens to on the phone of `token`, as a JSON member list to append
    /// to its `/simulator/pushes` line (empty for a push that carried no envelope):
    /// `"decrypted": {…}`, or `"decryptError": "…"` when it did not open.
    func opened(token: String, payload: [String: Any]) -> String {
        guard payload["e2e"] != nil else { return "" }
        guard let decryptor = decryptors.withLock({ $0[token] }) else { return #","decryptError":"the simulator holds no key for this token""# }
        do {
            let content = try decryptor.open(payload: payload)
            var object: [String: Any] = ["notificationId": content.notificationId, "text": content.text, "type": content.type]
            if let target = content.target { object["target"] = target }
            if let details = content.details { object["details"] = details }
            let json = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            return #","decrypted":"# + String(decoding: json, as: UTF8.self)
        } catch let error as DecryptionError {
            return #","decryptError":""# + JSONText.escaped(error.description) + "\""
        } catch {
            return #","decryptError":"could not encode the content""#
        }
    }

    /// The payload members a push to `service` carries its envelope in: the APNs payload, the
    /// Web Push message, or the data of an FCM, RuStore or Huawei message.
    static func payload(service: String, body: Data) -> [String: Any] {
        guard let root = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else { return [:] }
        // FCM, RuStore and Huawei requests hold their message under `message`.
        let object = root["message"] as? [String: Any] ?? root
        switch service {
        case "apns", "webpush":
            return object
        case "huawei":
            // Huawei's data is one string holding a JSON object.
            guard let text = object["data"] as? String else { return [:] }
            return (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
        default:
            return object["data"] as? [String: Any] ?? [:]
        }
    }

}
