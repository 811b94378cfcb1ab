import Foundation
import PigeonBankService
import PigeonCore
import PigeonHTTP
@testable import PigeonServer
import PigeonTestSupport
import Testing

/// The bank's SOAP service (CONTRACT §1) through the router on in-memory stores: every
/// operation's answer to the byte, faults for hostile input, Basic sign-in.
@Suite("Bank SOAP service through the router", .timeLimit(.minutes(TestTier.unitTestMinutes)))
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

    @Test("the WSDL carries the request's host; ?WSDL too; other methods are 405 with Allow; the outbound WSDL describes the bank proxy's service at its URL")
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
        for operation in ["checkSubscriptionAuthorized", "authorizeSubscription", "verifySubscriptionAuthorization", "reportNotificationExpired", "pushIsOpened", "BankClientNotExistsException"] {
            #expect(outbound.text.contains("name=\"\(operation)\""), "\(operation)")
        }
        #expect(outbound.text.contains("http://outbound.sbi.pigeon.idamobile.com/"))
        #expect(outbound.text.contains("https://bank.example/sbi"), "the address is sbiOutboundWebServiceURL")
        #expect(await harness.call("GET", "/pigeon/services/SBIOutbound").status == 404)
    }

    @Test("Basic sign-in: 401 with a challenge, the right credentials pass, padding does not")
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
    }

    @Test("the bank is never locked out by failures it did not cause: challenges are not counted, wrong guesses past ten a minute are 429 on a closed connection, the right credentials always pass")
    func signInFailuresNeverLockOutTheBank() async throws {
        let harness = try RouterHarness(soapCredentials: true)
        let operation = "<inb:getDeliveryStatus><id>x</id></inb:getDeliveryStatus>"
        let bank = (RouterHarness.soapUser, RouterHarness.soapPassword)
        // A browser opening the service, .NET asking for the challenge: any number, never counted.
        for _ in 0..<30 { #expect(await harness.soap(operation).status == 401) }
        #expect(await harness.soap(operation, credentials: bank).status == 200)
        // A stale instance with a rotated password, from the bank's own address.
        for attempt in 0..<10 {
            #expect(await harness.soap(operation, credentials: (RouterHarness.soapUser, "rotated-\(attempt)")).status == 401, "attempt \(attempt)")
        }
        let limited = await harness.soap(operation, credentials: (RouterHarness.soapUser, "rotated-10"))
        #expect(limited.status == 429)
        #expect(limited.header("Retry-After") != nil)
        #expect(limited.header("Connection") == "close", "each further guess costs a new connection")
        // The bank's calls from the same address go on.
        for _ in 0..<5 { #expect(await harness.soap(operation, credentials: bank).status == 200) }
        // Budgets are per user name and address: another user there, the same user elsewhere.
        #expect(await harness.soap(operation, credentials: ("someone-else", "x")).status == 401)
        #expect(await harness.soap(operation, credentials: (RouterHarness.soapUser, "x"), peer: "192.0.2.99").status == 401)
        #expect(harness.metrics.counter(Metric.soapSignInFailuresTotal, labels: ["reason": "no_credentials"]) == 30)
        #expect(harness.metrics.counter(Metric.soapSignInFailuresTotal, labels: ["reason": "wrong_credentials"]) == 12)
        #expect(harness.metrics.counter(Metric.soapSignInFailuresTotal, labels: ["reason": "limited"]) == 1)
    }

    @Test("a SOAP call with the bank's credentials authenticates its connection; without them it does not")
    func admissionMarksTheBanksConnection() throws {
        let harness = try RouterHarness(soapCredentials: true)
        let basic = "Basic " + Data("\(RouterHarness.soapUser):\(RouterHarness.soapPassword)".utf8).base64EncodedString()
        #expect(harness.router.admit(HTTPRequestHead(method: "POST", path: InboundEndpoint.path, authorization: basic))
                == .acceptAuthenticated(maxBytes: 1 << 20))
        #expect(harness.router.admit(HTTPRequestHead(method: "POST", path: InboundEndpoint.path, authorization: nil)) == .refuse)
        #expect(harness.router.admit(HTTPRequestHead(method: "GET", path: "/ready", authorization: basic)) == .accept(maxBytes: 0))
    }

    @Test("a body over maxRequestBytes is 413 naming the limit; a send within it is decoded")
    func requestSize() async throws {
        let harness = try RouterHarness { $0.http.maxRequestBytes = 4096 }
        let big = await harness.soap(RouterHarness.send(id: "big", to: (0..<400).map { "user-\($0)" }))
        #expect(big.status == 413)
        #expect(big.text.contains("maxRequestBytes (4096 bytes)"))
        #expect(await harness.soap(RouterHarness.send(id: "small", to: ["alice"])).status == 200)
    }

    @Test("subscriptions: deleteSubscription of a user without devices is ENTITY_NOT_FOUND, control characters in a user a fault; checkSubscriptionExists answers in order, folding case")
    func subscriptions() async throws {
        let harness = try RouterHarness(authorizedUsers: ["alice"])
        _ = try await harness.register(user: "alice")
        #expect(await harness.soap("<inb:deleteSubscription><user>nobody</user></inb:deleteSubscription>").text.contains("<status>ENTITY_NOT_FOUND</status>"))
        let control = await harness.soap("<inb:deleteSubscription><user>a&#13;lice</user></inb:deleteSubscription>")
        #expect(control.status == 500 && control.text.contains("'user'"), "\(control.text)")
        let exists = await harness.soap("<inb:checkSubscriptionExists><user>ALICE</user><user>nobody</user><user>alice</user></inb:checkSubscriptionExists>")
        #expect(exists.text.contains("<exists>true</exists><exists>false</exists><exists>true</exists>"), "\(exists.text)")
        #expect(harness.stores.devices.count == 1)
    }
}

/// The request shapes and notification options the bank's SOAP stacks send.
@Suite("Bank SOAP requests and options through the router", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct BankRequestStyleRouteTests {
    @Test("SOAP 1.2, an unqualified wrapper and the seed-style bare request are all understood")
    func requestStyles() async throws {
        let harness = try RouterHarness()
        let soap12 = """
            <env:Envelope xmlns:env="http://www.w3.org/2003/05/soap-envelope"><env:Body>\
            <ns:sendNotification xmlns:ns="http://inbound.sbi.pigeon.idamobile.com/"><ns:notification><ns:id>s12</ns:id>\
            <ns:pushContent><ns:text>t</ns:text><ns:type>URL</ns:type></ns:pushContent><ns:recipients>u</ns:recipients><ns:timeout>5</ns:timeout>\
            </ns:notification></ns:sendNotification></env:Body></env:Envelope>
            """
        let reply12 = await harness.soapRaw(Data(soap12.utf8), contentType: "application/soap+xml; charset=utf-8")
        #expect(reply12.status == 200)
        #expect(reply12.header("Content-Type")?.hasPrefix("application/soap+xml") == true)
        #expect(reply12.text.contains("http://www.w3.org/2003/05/soap-envelope"))
        #expect(reply12.text.contains("<status>OK</status>"))
        let seed = """
            <soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>
            <sendNotification>
               <notification>
                  <details><entry><key>logo_url</key><value>http://www.idamob.ru/ic.png</value></entry></details>
                  <id>bare</id>
                  <pushContent><badge>0</badge><details><entry><key>target</key><value>nil</value></entry></details>
                     <sound>default</sound><text>Текст для отображения в шторке телефона</text><type>UNIVERSAL</type></pushContent>
                  <recipients>id_user_1</recipients>
                  <recipients>id_user_2</recipients>
                  <timeout>1000</timeout>
               </notification>
            </sendNotification></soapenv:Body></soapenv:Envelope>
            """
        let replySeed = await harness.soapRaw(Data(seed.utf8))
        #expect(replySeed.status == 200)
        #expect(replySeed.text.contains("<entry><key>id_user_1</key><value>INVALID_SUBSCRIPTION</value></entry>"))
        let details = await harness.soap("<getNotificationDetails><id>bare</id></getNotificationDetails>")
        #expect(details.text.contains("<text>Текст для отображения в шторке телефона</text>"))
        #expect(details.text.contains("<value>http://www.idamob.ru/ic.png</value>"))
        #expect(harness.stored == ["s12", "bare"])
    }

    @Test("interruptionLevel is stored and answered by getNotificationDetails; each recipient once, whatever its case")
    func interruptionLevelAndRecipients() async throws {
        let harness = try RouterHarness()
        _ = try await harness.register(user: "alice")
        let sent = await harness.soap(RouterHarness.send(id: "il", to: ["alice", "ALICE", "bob"], extra: "<interruptionLevel>time-sensitive</interruptionLevel>"))
        #expect(sent.text.contains("<deliveryStatus><entry><key>alice</key><value>QUEUED</value></entry><entry><key>bob</key><value>INVALID_SUBSCRIPTION</value></entry></deliveryStatus>"), "\(sent.text)")
        let details = await harness.soap("<inb:getNotificationDetails><id>il</id></inb:getNotificationDetails>")
        #expect(details.text.contains("<interruptionLevel>time-sensitive</interruptionLevel>"), "\(details.text)")
    }

    @Test("confidential: the flag or confidentialTypes makes a send confidential; text over 1,024 bytes is a fault naming text; the phone reads it until it is over (410 after)")
    func confidential() async throws {
        let harness = try RouterHarness { $0.confidential.types = [.pinCode] }
        let alice = try await harness.register(user: "alice")
        let long = String(repeating: "x", count: 1025)
        let tooLong = await harness.soap(RouterHarness.send(id: "c-long", to: ["alice"], text: long))
        #expect(tooLong.status == 500 && tooLong.text.contains("text"), "\(tooLong.text)")
        let flagged = await harness.soap(RouterHarness.send(id: "c-flag", to: ["alice"], type: "UNIVERSAL", extra: "<confidential>true</confidential>"))
        #expect(flagged.text.contains("<status>OK</status>"), "\(flagged.text)")
        #expect(await harness.soap(RouterHarness.send(id: "c-type", to: ["alice"], text: "Code 4711")).text.contains("<status>OK</status>"))
        #expect(harness.stored == ["c-flag", "c-type"])
        let plainLong = await harness.soap(RouterHarness.send(id: "plain-long", to: ["alice"], text: long, type: "UNIVERSAL"))
        #expect(plainLong.text.contains("<status>OK</status>"), "the limit is the confidential one only")
        let readable = await harness.call("GET", "/api/v1/notifications/c-type/details", bearer: alice)
        #expect(readable.status == 200 && readable.text.contains("Code 4711"))
        harness.stores.eraseContent(notificationId: "c-type")
        let gone = await harness.call("GET", "/api/v1/notifications/c-type/details", bearer: alice)
        #expect(gone.status == 410 && gone.json["error"] == "CONTENT_GONE")
    }
}
