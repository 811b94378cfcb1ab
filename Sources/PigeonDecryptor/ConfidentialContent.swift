import Foundation

/// What a confidential push carries once opened: the notification as the app shows it.
package struct ConfidentialContent: Sendable, Equatable {
    package var notificationId: String
    package var text: String
    /// `PIN_CODE`, `MESSAGE`, … (CONTRACT §1).
    package var type: String
    /// The type's target (a PIN code, a URL, …), when the notification has one.
    package var target: String?
    /// The notification's details, when it has any.
    package var details: [String: String]?

    package init(notificationId: String, text: String, type: String, target: String? = nil, details: [String: String]? = nil) {
        self.notificationId = notificationId
        self.text = text
        self.type = type
        self.target = target
        self.details = details
    }

    /// The content from the plaintext's JSON (padding already removed).
    init(json: Data) throws(DecryptionError) {
        guard let object = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any] else {
            throw .malformedContent("not a JSON object")
        }
        guard let id = object["notificationId"] as? String, let text = object["text"] as? String, let type = object["type"] as? String else {
            throw .malformedContent("'notificationId', 'text' and 'type' are required strings")
        }
        notificationId = id
        self.text = text
        self.type = type
        target = object["target"] as? String
        if let raw = object["details"] {
            guard let map = raw as? [String: String] else { throw .malformedContent("'details' is not an object of strings") }
            details = map
        }
    }
}
