import Foundation
@testable import PigeonServer
import PigeonTestSupport
import Testing

/// The router itself (CONTRACT §5): which surface serves what, `/health` and `/ready`,
/// `/metrics` by route template, request ids.
@Suite("Router", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct RouterTests {
    static let bankPaths = ["/pigeon/services/SBIInboundWebService?wsdl", "/pigeon/services/SBIOutbound?wsdl", "/metrics", "/ready"]

    @Test("the devices surface serves the device API, PassKit and health, and answers the bank's paths 404 like unknown ones")
    func devicesSurface() async throws {
        let harness = try RouterHarness(surfaces: .devices)
        let unknown = await harness.call("GET", "/nowhere")
        #expect(unknown.status == 404)
        for path in Self.bankPaths {
            let answer = await harness.call("GET", path)
            #expect(answer.status == 404, "\(path)")
            #expect(answer.text == unknown.text, "\(path) must look exactly like an unknown path")
        }
        #expect(await harness.soap("<inb:getDeliveryStatus><id>x</id></inb:getDeliveryStatus>").status == 404)
        #expect(await harness.call("POST", "/api/v1/devices/register", body: "{}").status == 400)
        #expect(await harness.call("GET", "/health").status == 200)
    }

    @Test("the bank surface serves SOAP, both WSDLs, metrics and ready, and no device API or PassKit")
    func bankSurface() async throws {
        let harness = try RouterHarness(surfaces: .bank)
        for path in Self.bankPaths { #expect(await harness.call("GET", path).status == 200, "\(path)") }
        #expect(await harness.soap("<inb:getDeliveryStatus><id>x</id></inb:getDeliveryStatus>").text.contains("ENTITY_NOT_FOUND"))
        #expect(await harness.call("POST", "/api/v1/devices/register", body: "{}").status == 404)
        #expect(await harness.call("GET", "/passkit/v1/passes/pass.x/serial").status == 404)
        #expect(await harness.call("GET", "/health").status == 200)
    }

    @Test("/ready: UP with the schema current; 503 naming pending migrations; 503 when the database does not answer; 503 once the gateway stops (/health still UP); GET only")
    func readiness() async throws {
        let current = await (try RouterHarness()).call("GET", "/ready")
        #expect(current.status == 200)
        #expect(current.text == #"{"status":"UP"}"#)
        let pending = await (try RouterHarness(database: .pending([14, 15]))).call("GET", "/ready")
        #expect(pending.status == 503)
        #expect(pending.text.contains("pending migrations: 14,15"))
        let down = await (try RouterHarness(database: .unreachable)).call("GET", "/ready")
        #expect(down.status == 503)
        #expect(down.text.contains("database unreachable"))
        let stopping = try RouterHarness()
        stopping.stopping.request()
        let draining = await stopping.call("GET", "/ready")
        #expect(draining.status == 503)
        #expect(draining.text.contains("shutting down"))
        #expect(await stopping.call("GET", "/health").status == 200)
        let post = await (try RouterHarness()).call("POST", "/ready")
        #expect(post.status == 405)
        #expect(post.header("Allow") == "GET")
        #expect(await (try RouterHarness()).call("POST", "/health", body: "x").status == 413)
    }

    @Test("metrics count requests by route template (a refused device call under its own call's route, `api` only for no call), method and status; unknown methods are OTHER; ids never become labels; a 405 of the device API says Allow")
    func metrics() async throws {
        let harness = try RouterHarness()
        _ = await harness.call("POST", "/api/v1/notifications/secret-id-1/delivered")
        _ = await harness.call("POST", "/api/v1/notifications/secret-id-2/delivered")
        _ = await harness.call("POST", "/api/v1/no/such/call")
        let wrongMethod = await harness.call("GET", "/api/v1/devices/register")
        #expect(wrongMethod.status == 405 && wrongMethod.header("Allow") == "POST")
        #expect(await harness.call("PUT", "/api/v1/notifications/x/details").header("Allow") == "GET")
        #expect(await harness.call("GET", "/api/v1/activities/a-1/token").header("Allow") == "PUT")
        _ = await harness.call("BREW", "/coffee")
        _ = await harness.soap("<inb:getDeliveryStatus><id>x</id></inb:getDeliveryStatus>")
        let text = await harness.call("GET", "/metrics").text
        #expect(text.contains(#"pigeon_http_requests_total{method="POST",route="api_delivered",status="401"} 2"#), "\(text.split(separator: "\n").filter { $0.contains("http_requests") })")
        #expect(text.contains(#"pigeon_http_requests_total{method="POST",route="api",status="404"} 1"#))
        #expect(text.contains(#"pigeon_http_requests_total{method="GET",route="api_register",status="405"} 1"#))
        #expect(text.contains(#"pigeon_http_requests_total{method="OTHER",route="unknown",status="404"} 1"#))
        #expect(text.contains(#"pigeon_http_requests_total{method="POST",route="soap_inbound",status="200"} 1"#))
        #expect(text.contains(#"pigeon_http_request_duration_seconds_bucket{le="+Inf",route="soap_inbound"} 1"#))
        #expect(!text.contains("secret-id"))
    }

    @Test("every answer carries X-Request-Id: the client's when it is plain, a new one otherwise")
    func requestIds() async throws {
        let harness = try RouterHarness()
        #expect(await harness.call("GET", "/health", headers: ["x-request-id": "bank-trace.42_a"]).header("X-Request-Id") == "bank-trace.42_a")
        let hostile = await harness.call("GET", "/health", headers: ["x-request-id": "evil\r\nSet-Cookie: x"])
        let generated = try #require(hostile.header("X-Request-Id"))
        #expect(!generated.contains("evil") && !generated.isEmpty)
        let long = await harness.call("GET", "/health", headers: ["x-request-id": String(repeating: "a", count: 65)])
        #expect(long.header("X-Request-Id")?.count ?? 0 < 65)
        let first = await harness.call("GET", "/nowhere").header("X-Request-Id")
        let second = await harness.call("GET", "/nowhere").header("X-Request-Id")
        #expect(first != nil && first != second)
    }

    @Test("/health answers UP on either surface whatever the database does; other methods 405")
    func health() async throws {
        for surfaces: Router.Surfaces in [.devices, .bank] {
            let harness = try RouterHarness(surfaces: surfaces, database: .unreachable)
            let health = await harness.call("GET", "/health")
            #expect(health.status == 200)
            #expect(health.text == #"{"status":"UP"}"#)
            #expect(await harness.call("DELETE", "/health").status == 405)
        }
    }
}

/// What each listener copies out of a connection: the headers its router's endpoints read.
@Suite("Router.requestHeaders: the listener copies what the endpoints read", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct RequestHeadersTests {
    @Test("the phones' listener copies the bearer token and If-Modified-Since, never the console's cookie or CSRF token")
    func devicesSurface() throws {
        let headers = try RouterHarness(surfaces: [.devices], console: true).router.requestHeaders
        #expect(headers.isSuperset(of: ["authorization", "if-modified-since", "x-request-id"]))
        #expect(headers.isDisjoint(with: ["cookie", "x-csrf-token", "soapaction"]), "\(headers)")
    }

    @Test("the bank's listener with the console copies its cookie and CSRF token and SOAP's Content-Type and Host; without the console, neither console header")
    func bankSurface() throws {
        let withConsole = try RouterHarness(surfaces: [.bank], console: true).router.requestHeaders
        #expect(withConsole.isSuperset(of: ["cookie", "x-csrf-token", "content-type", "host", "authorization"]), "\(withConsole)")
        let without = try RouterHarness(surfaces: [.bank]).router.requestHeaders
        #expect(without.isDisjoint(with: ["cookie", "x-csrf-token", "if-modified-since"]), "\(without)")
    }
}
