import Foundation
import PigeonCore
import PigeonDomain
import PigeonStore
import PigeonTestSupport
import Testing
@testable import PigeonServer

@Suite("Inbound SOAP over HTTP", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct InboundSOAPTests {
    @Test("all five operations, end to end")
    func fiveOperations() async throws {
        try await GatewayHarness.with { harness in
            let pool = try await TestDatabase.migratedPool(size: 1)
            defer { pool.close() }
            let alice = TestDatabase.unique("alice"), bob = TestDatabase.unique("bob")
            try await SubscriptionStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
                .subscribe(bankClientId: "bank", userId: alice, deviceId: "d", platform: .ios, pushToken: "abcdef")
            let id = TestDatabase.unique("n")

            let sent = try await harness.soap(GatewayHarness.sendNotification(id: id, recipients: [alice, bob]))
            #expect(sent.status == 200)
            #expect(sent.headers["content-type"]?.hasPrefix("text/xml") == true)
            #expect(sent.text.contains("<ns2:sendNotificationResponse xmlns:ns2=\"http://inbound.sbi.pigeon.idamobile.com/\"><return><status>OK</status><deliveryStatus><entry><key>\(alice)</key><value>QUEUED</value></entry><entry><key>\(bob)</key><value>INVALID_SUBSCRIPTION</value></entry></deliveryStatus></return>"))

            let again = try await harness.soap(GatewayHarness.sendNotification(id: id, recipients: [bob]))
            #expect(again.text.contains("<status>DUPLICATED_ENTITY</status>"))
            #expect(again.text.contains("<key>\(alice)</key><value>QUEUED</value>"))

            let details = try await harness.soap("<inb:getNotificationDetails><id>\(id)</id></inb:getNotificationDetails>")
            #expect(details.text.contains("<status>OK</status><notification><id>\(id)</id><pushContent><badge>1</badge><text>Hello</text><type>UNIVERSAL</type></pushContent><recipients>\(alice)</recipients><recipients>\(bob)</recipients><timeout>60</timeout></notification>"))

            let status = try await harness.soap("<inb:getDeliveryStatus><id>\(id)</id></inb:getDeliveryStatus>")
            #expect(status.text.contains("<status>OK</status><deliveryStatus><entry><key>\(alice)</key><value>QUEUED</value></entry>"))
            let missing = try await harness.soap("<inb:getDeliveryStatus><id>nope-\(id)</id></inb:getDeliveryStatus>")
            #expect(missing.text.contains("<status>ENTITY_NOT_FOUND</status><errorMessage>"))

            let exists = try await harness.soap("<inb:checkSubscriptionExists><user>\(bob)</user><user>\(alice)</user></inb:checkSubscriptionExists>")
            #expect(exists.text.contains("<status>OK</status><exists>false</exists><exists>true</exists>"))

            let deleted = try await harness.soap("<inb:deleteSubscription><user>\(alice)</user></inb:deleteSubscription>")
            #expect(deleted.text.contains("<return><status>OK</status></return>"))
            let gone = try await harness.soap("<inb:checkSubscriptionExists><user>\(alice)</user></inb:checkSubscriptionExists>")
            #expect(gone.text.contains("<exists>false</exists>"))
            let deletedAgain = try await harness.soap("<inb:deleteSubscription><user>\(alice)</user></inb:deleteSubscription>")
            #expect(deletedAgain.text.contains("<status>ENTITY_NOT_FOUND</status>"))
        }
    }

    @Test("health, readiness and metrics")
    func operatorEndpoints() async throws {
        try await GatewayHarness.with { harness in
            #expect(try await harness.request("GET", "/health").status == 200)
            let ready = try await harness.request("GET", "/ready")
            #expect(ready.status == 200)
            _ = try await harness.soap("<inb:getDeliveryStatus><id>x</id></inb:getDeliveryStatus>")
            let metrics = try await harness.request("GET", "/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.text.contains("pigeon_http_requests_total{method=\"POST\",route=\"soap_inbound\",status=\"200\"} 1"))
            #expect(metrics.text.contains("pigeon_http_request_duration_seconds_bucket{le=\"+Inf\",route=\"soap_inbound\"} 1"))
            #expect(metrics.text.contains("# TYPE pigeon_http_requests_total counter"))
            // Each database pool's connections, busy ones and waiting queries (issue 47).
            for pool in ["main", "engine", "urgent"] {
                #expect(metrics.text.contains("pigeon_db_pool_connections{pool=\"\(pool)\"}"), "\(pool)")
                #expect(metrics.text.contains("pigeon_db_pool_waiting{pool=\"\(pool)\"}"), "\(pool)")
            }
            #expect(try await harness.request("GET", "/nowhere").status == 404)
        }
    }

    @Test("HTTP Basic protects the SOAP endpoint when configured")
    func basicAuthentication() async throws {
        // The sign-in limit's minute stands still: the guesses below count in one window however
        // long a loaded machine takes to make them (under load here the ten took over a minute).
        let harness = try await GatewayHarness(clock: { Date(timeIntervalSince1970: 1_800_000_000) }) {
            $0.http.soapUsername = "bank"
            $0.http.soapPassword = "s3cret:with colon"
        }
        // URLSession on Linux stalls on a 401 challenge it cannot answer, so curl plays the client.
        let body = GatewayHarness.envelope("<inb:getDeliveryStatus><id>x</id></inb:getDeliveryStatus>")
        let url = harness.baseURL + GatewayHarness.soapPath
        let common = ["-H", "Content-Type: text/xml", "--data-binary", body, "-D", "-"]
        let anonymous = try await BadInputTests.curl(common + [url])
        #expect(anonymous.hasPrefix("401"))
        #expect(anonymous.contains("WWW-Authenticate: Basic"))
        let wrong = try await BadInputTests.curl(common + ["-u", "bank:nope", url])
        #expect(wrong.hasPrefix("401"))
        let right = try await BadInputTests.curl(common + ["-u", "bank:s3cret:with colon", url])
        #expect(right.hasPrefix("200"))
        #expect(right.contains("<status>ENTITY_NOT_FOUND</status>"))
        #expect(try await harness.request("GET", "/health").status == 200)
        // The right password followed by NUL bytes is wrong.
        let padded = "Authorization: Basic " + Data(("bank:s3cret:with colon" + String(repeating: "\0", count: 256)).utf8).base64EncodedString()
        #expect(try await BadInputTests.curl(common + ["-H", padded, url]).hasPrefix("401"))
        // Ten wrong guesses for one user from one address in a minute (this one has had two; the
        // anonymous call is a challenge, not counted): then 429, late and on a closed connection,
        // while the right credentials still pass.
        for _ in 0..<8 { #expect(try await BadInputTests.curl(common + ["-u", "bank:guess", url]).hasPrefix("401")) }
        let throttled = try await BadInputTests.curl(common + ["-u", "bank:guess", url])
        #expect(throttled.hasPrefix("429"))
        #expect(throttled.contains("Retry-After:"))
        #expect(throttled.lowercased().contains("connection: close"))
        #expect(try await BadInputTests.curl(common + ["-u", "bank:s3cret:with colon", url]).hasPrefix("200"))
    }
}
