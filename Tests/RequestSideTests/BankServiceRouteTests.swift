import Foundation
import PigeonCore
import PigeonTestSupport
import Testing

/// The bank's SOAP service (CONTRACT §1) through the router on in-memory stores: every
/// operation's answer to the byte, faults for hostile input, Basic sign-in.
@Suite("Bank SOAP service through the router")
struct BankServiceRouteTests {
    @Test("the five subscription and notification operations answer as the JAX-WS service did")
    func fiveOperations() async throws {
        let harness = try RouterHarness()
        _ = try await harness.register(user: "alice")
        let sent = await harness.soap(RouterHarness.send(id: "n-1", to: ["alice", "bob"], text: "Hello", type: "UNIVERSAL"))
        #expect(sent.status == 200)
        #expect(sent.header("Content-Type")?.hasPrefix("text/xml") == true)
        #expect(sent.text.contains("<ns2:sendNotificationResponse xmlns:ns2=\"http://inbound.sbi.pigeon.idamobile.com/\"><return><status>OK</status><deliveryStatus><entry><key>alice</key><value>QUEUED</value></entry><entry><key>bob</key><value>INVALID_SUBSCRIPTION</value></entry></deliveryStatus></return>"), "\(sent.text)")
        #expect(harness.stored == ["n-1"], "a stored send wakes the engine once")

        let again = await harness.soap(RouterHarness.send(id: "n-1", to: ["bob"]))
        #expect(again.text.contains("<status>DUPLICATED_ENTITY</status>"))
        #expect(again.text.contains("<key>alice</key><value>QUEUED</value>"))
        #expect(harness.stored == ["n-1"], "a duplicate wakes nothing")

        let details = await harness.soap("<inb:getNotificationDetails><id>n-1</id></inb:getNotificationDetails>")
        #expect(details.text.contains("<status>OK</status><notification><id>n-1</id><pushContent><text>Hello</text><type>UNIVERSAL</type></pushContent><recipients>alice</recipients><recipients>bob</recipients><timeout>60</timeout></notification>"), "\(details.text)")
        let status = await harness.soap("<inb:getDeliveryStatus><id>n-1</id></inb:getDeliveryStatus>")
        #expect(status.text.contains("<status>OK</status><deliveryStatus><entry><key>alice</key><value>QUEUED</value></entry>"))
        #expect(await harness.soap("<inb:getDeliveryStatus><id>nope</id></inb:getDeliveryStatus>").text.contains("<status>ENTITY_NOT_FOUND</status><errorMessage>"))
        #expect(await harness.soap("<inb:getNotificationDetails><id>nope</id></inb:getNotificationDetails>").text.contains("<status>ENTITY_NOT_FOUND</status>"))

        let exists = await harness.soap("<inb:checkSubscriptionExists><user>bob</user><user>alice</user></inb:checkSubscriptionExists>")
        #expect(exists.text.contains("<status>OK</status><exists>false</exists><exists>true</exists>"))
        let deleted = await harness.soap("<inb:deleteSubscription><user>alice</user></inb:deleteSubscription>")
        #expect(deleted.text.contains("<return><status>OK</status></return>"))
        #expect(harness.stores.devices.isEmpty)
        #expect(await harness.soap("<inb:deleteSubscription><user>alice</user></inb:deleteSubscription>").text.contains("<status>ENTITY_NOT_FOUND</status>"))
    }

    @Test("each hostile request is refused with a fault naming the problem, nothing stored", arguments: HostileSOAP.cases)
    func hostile(_ badCase: HostileSOAP.Case) async throws {
        let harness = try RouterHarness()
        let reply = await harness.soapRaw(badCase.body)
        #expect(reply.status == badCase.status)
        #expect(reply.text.contains(badCase.reason), "\(reply.text)")
        #expect(!reply.text.contains(HostileSOAP.passwdMarker))
        if badCase.status == 500 {
            #expect(reply.text.contains("<faultcode>soap:Client</faultcode>"))
        }
        #expect(harness.stored.isEmpty)
    }

    @Test("faults name the field: a priority out of range, an unknown interruption level, control characters in an id")
    func namedFaults() async throws {
        let harness = try RouterHarness()
        let cases: [(String, String)] = [
            (RouterHarness.send(id: "p", to: ["alice"], extra: "<priority>99999999999</priority>"), "notification/priority"),
            (RouterHarness.send(id: "i", to: ["alice"], extra: "<interruptionLevel>shout</interruptionLevel>"), "interruptionLevel"),
            (RouterHarness.send(id: "a&#10;b", to: ["alice"]), "control characters"),
        ]
        for (operation, named) in cases {
            let reply = await harness.soap(operation)
            #expect(reply.status == 500, "\(reply.text)")
            #expect(reply.text.contains(named), "\(reply.text)")
        }
        #expect(harness.stored.isEmpty)
    }

    @Test("the WSDL carries the request's host; ?WSDL too; other methods are 405 with Allow")
    func wsdl() async throws {
        let harness = try RouterHarness()
        let reply = await harness.call("GET", "/pigeon/services/SBIInboundWebService?wsdl", headers: ["host": "gateway.bank.example:8443"])
        #expect(reply.status == 200)
        #expect(reply.text.contains("<soap:address location=\"https://gateway.bank.example:8443/pigeon/services/SBIInboundWebService\"/>"))
        #expect(await harness.call("GET", "/pigeon/services/SBIInboundWebService?WSDL").status == 200)
        let wrong = await harness.call("PUT", "/pigeon/services/SBIInboundWebService", body: "x")
        #expect(wrong.status == 405)
        #expect(wrong.header("Allow") == "GET, POST")
        let outbound = await harness.call("GET", "/pigeon/services/SBIOutbound?wsdl")
        #expect(outbound.status == 200)
        #expect(outbound.text.contains("checkSubscriptionAuthorized"))
        #expect(await harness.call("GET", "/pigeon/services/SBIOutbound").status == 404)
    }

    @Test("Basic sign-in: 401 with a challenge, the right credentials pass, padding does not; ten failures a minute bring 429")
    func basicAuthentication() async throws {
        let harness = try RouterHarness(soapCredentials: true)
        let operation = "<inb:getDeliveryStatus><id>x</id></inb:getDeliveryStatus>"
        let anonymous = await harness.soap(operation)
        #expect(anonymous.status == 401)
        #expect(anonymous.header("WWW-Authenticate")?.hasPrefix("Basic") == true)
        #expect(await harness.soap(operation, credentials: (RouterHarness.soapUser, "nope")).status == 401)
        let right = await harness.soap(operation, credentials: (RouterHarness.soapUser, RouterHarness.soapPassword))
        #expect(right.status == 200)
        #expect(right.text.contains("<status>ENTITY_NOT_FOUND</status>"))
        #expect(await harness.soap(operation, credentials: (RouterHarness.soapUser, RouterHarness.soapPassword + String(repeating: "\0", count: 256))).status == 401)
        for _ in 0..<8 { _ = await harness.soap(operation, credentials: (RouterHarness.soapUser, "guess")) }
        let limited = await harness.soap(operation, credentials: (RouterHarness.soapUser, RouterHarness.soapPassword))
        #expect(limited.status == 429, "ten failed sign-ins from one address: even the right password waits")
        #expect(limited.header("Retry-After") != nil)
    }

    @Test("a body over maxRequestBytes is 413 naming the limit; a send within it is decoded")
    func requestSize() async throws {
        let harness = try RouterHarness { $0.http.maxRequestBytes = 4096 }
        let big = await harness.soap(RouterHarness.send(id: "big", to: (0..<400).map { "user-\($0)" }))
        #expect(big.status == 413)
        #expect(big.text.contains("maxRequestBytes (4096 bytes)"))
        #expect(await harness.soap(RouterHarness.send(id: "small", to: ["alice"])).status == 200)
    }
}
