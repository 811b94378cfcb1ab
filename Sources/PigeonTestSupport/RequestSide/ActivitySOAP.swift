import Foundation

/// The bank's Live Activity operations as SOAP bodies (CONTRACT §9), and the bad ones with the
/// field each fault must name: shared by the unit tier (through the router) and the end-to-end suite.
package enum ActivitySOAP {
    package static func start(id: String, recipients: [String], contentState: String = #"{"step":"accepted"}"#,
                              attributes: String = #"{"transferId":"T-1"}"#, type: String = "TransferAttributes", extra: String = "") -> String {
        "<inb:startActivity><activityId>\(id)</activityId><activityType>\(type)</activityType>"
            + recipients.map { "<recipients>\($0)</recipients>" }.joined()
            + "<attributes>\(escaped(attributes))</attributes><contentState>\(escaped(contentState))</contentState>\(extra)</inb:startActivity>"
    }

    package static func update(id: String, contentState: String, extra: String = "") -> String {
        "<inb:updateActivity><activityId>\(id)</activityId><contentState>\(escaped(contentState))</contentState>\(extra)</inb:updateActivity>"
    }

    package static func end(id: String, extra: String = "") -> String {
        "<inb:endActivity><activityId>\(id)</activityId>\(extra)</inb:endActivity>"
    }

    package static func status(id: String) -> String {
        "<inb:getActivityStatus><activityId>\(id)</activityId></inb:getActivityStatus>"
    }

    /// Text escaped for an XML element.
    package static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
            .replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// Requests the gateway must refuse with a fault naming `field`, storing nothing.
    package static let badRequests: [(request: String, field: String)] = [
        ("<inb:updateActivity><activityId>never-started</activityId><contentState>{}</contentState></inb:updateActivity>", "activityId"),
        ("<inb:endActivity><activityId>never-started</activityId></inb:endActivity>", "activityId"),
        (start(id: "bad-1", recipients: ["b-user"], attributes: "[1,2]"), "attributes"),
        (start(id: "bad-2", recipients: ["b-user"], attributes: "not json"), "attributes"),
        (start(id: "bad-3", recipients: ["b-user"], contentState: "5"), "contentState"),
        (start(id: "bad-4", recipients: ["b-user"], contentState: "{\"a\":\"" + String(repeating: "x", count: 5000) + "\"}"), "contentState"),
        (start(id: "bad-5", recipients: ["b-user"], contentState: "{\"a\":\"" + String(repeating: "x", count: 2500) + "\"}",
               attributes: "{\"b\":\"" + String(repeating: "y", count: 2500) + "\"}"), "attributes, contentState"),
        (start(id: "bad id", recipients: ["b-user"]), "activityId"),
        (start(id: "bad-6", recipients: ["b-user"], extra: "<staleAfterSeconds>0</staleAfterSeconds>"), "staleAfterSeconds"),
        (update(id: "bad-1", contentState: "{}", extra: "<priority>7</priority>"), "priority"),
        ("<inb:sendNotification><notification><id>il-1</id><interruptionLevel>urgent</interruptionLevel><pushContent><text>t</text><type>MESSAGE</type></pushContent><recipients>b-user</recipients><timeout>60</timeout></notification></inb:sendNotification>", "interruptionLevel"),
    ]
}
