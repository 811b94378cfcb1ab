import Foundation

/// Hostile and broken SOAP requests, each with the status and the reason its answer must carry
/// (a SOAP Fault naming the problem, never the content of a file): XXE, entity expansion,
/// encodings that hide a DOCTYPE, wrong types, missing fields. The unit tier sends each through
/// the router, the integration tier all at once to a gateway that must keep answering.
package enum HostileSOAP {
    /// What `/etc/passwd` starts with: no answer may contain it.
    package static let passwdMarker = "root:x:0:0"

    package static func envelope(_ body: String) -> String {
        "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\" xmlns:inb=\"http://inbound.sbi.pigeon.idamobile.com/\"><soapenv:Body>\(body)</soapenv:Body></soapenv:Envelope>"
    }

    static func sendNotification(id: String, recipient: String, timeout: String) -> String {
        "<inb:sendNotification><notification><id>\(id)</id><pushContent><badge>1</badge><text>Hello</text><type>UNIVERSAL</type></pushContent>"
            + "<recipients>\(recipient)</recipients><timeout>\(timeout)</timeout></notification></inb:sendNotification>"
    }

    /// A request body and what the answer must contain.
    package struct Case: Sendable, CustomStringConvertible {
        package var name: String
        package var body: Data
        package var status: Int
        package var reason: String
        package var description: String { name }
    }

    static func send(_ id: String, recipient: String = "u", timeout: String = "60", doctype: String = "", entity: String = "") -> String {
        "<?xml version=\"1.0\"?>\(doctype)" + envelope(sendNotification(id: id, recipient: recipient + entity, timeout: timeout))
    }

    package static let cases: [Case] = {
        var cases: [Case] = []
        func add(_ name: String, _ body: String, _ status: Int, _ reason: String) {
            cases.append(Case(name: name, body: Data(body.utf8), status: status, reason: reason))
        }
        add("malformed XML", "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><oops></soapenv:Body>", 500, "malformed XML")
        add("external entity to /etc/passwd",
            send("bad-xxe", doctype: "<!DOCTYPE foo [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>", entity: "&xxe;"), 500, "DTDs and entity declarations are not accepted")
        add("external entity over HTTP",
            send("bad-xxe-http", doctype: "<!DOCTYPE foo [<!ENTITY xxe SYSTEM \"http://127.0.0.1:9/x\">]>", entity: "&xxe;"), 500, "DTDs")
        var laughs = "<!DOCTYPE lolz [<!ENTITY lol \"lol\">"
        for level in 1...9 {
            laughs += "<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level == 1 ? "" : String(level - 1));", count: 10) + "\">"
        }
        add("billion laughs", send("bad-laughs", doctype: laughs + "]>", entity: "&lol9;"), 500, "DTDs")
        add("quadratic blow-up",
            send("bad-quadratic", doctype: "<!DOCTYPE q [<!ENTITY a \"\(String(repeating: "B", count: 30_000))\">]>", entity: String(repeating: "&a;", count: 3_000)), 500, "DTDs")
        add("wrong type", send("bad-type", timeout: "abc"), 500, "element 'notification/timeout' must be an int, got 'abc'")
        add("missing required field",
            envelope("<inb:sendNotification><notification><id>bad-missing</id><pushContent><text>t</text><type>URL</type></pushContent><timeout>5</timeout></notification></inb:sendNotification>"),
            500, "missing required element 'notification/recipients'")
        add("unknown operation", envelope("<inb:launchMissiles><target>moon</target></inb:launchMissiles>"), 500, "unknown operation 'launchMissiles'")
        add("empty body", "", 500, "the request body is empty")
        add("not SOAP", "{\"json\": true}", 500, "does not start with")
        let doctype = "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>" + envelope(sendNotification(id: "bad-utf16", recipient: "&e;", timeout: "60"))
        cases.append(Case(name: "DOCTYPE in UTF-16 without BOM", body: doctype.data(using: .utf16LittleEndian)!, status: 500, reason: "NUL bytes"))
        cases.append(Case(name: "DOCTYPE in UTF-16BE without BOM", body: doctype.data(using: .utf16BigEndian)!, status: 500, reason: "NUL bytes"))
        add("DOCTYPE in UTF-7", "<?xml version=\"1.0\" encoding=\"UTF-7\"?>+ADw-!DOCTYPE x +AFs-+ADw-!ENTITY e SYSTEM +ACI-file:///etc/passwd+ACI-+AD4-+AF0-+AD4-+ADw-x+AD4-+ACY-e+ADs-+ADw-/x+AD4-", 500, "encoding 'UTF-7' is not accepted")
        // "<?xml version="1.0" encoding="IBM037"?><!DOCTYPE" in EBCDIC code page 037.
        let ebcdic: [UInt8] = [0x4C, 0x6F, 0xA7, 0x94, 0x93, 0x40, 0xA5, 0x85, 0x99, 0xA2, 0x89, 0x96, 0x95, 0x7E, 0x7F, 0xF1, 0x4B, 0xF0, 0x7F, 0x6F, 0x6E, 0x4C, 0x5A, 0xC4, 0xD6, 0xC3, 0xE3, 0xE8, 0xD7, 0xC5]
        cases.append(Case(name: "DOCTYPE in EBCDIC", body: Data(ebcdic), status: 500, reason: "does not start with"))
        return cases
    }()

}
