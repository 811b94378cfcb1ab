import Foundation
@testable import PigeonHTTP
@testable import PigeonWallet
import Testing
import PigeonTestSupport

/// HTTP Basic credentials: exactly the configured bytes, nothing padded.
@Suite("Basic authentication", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct BasicAuthenticationTests {
    func header(_ text: String) -> String { "Basic " + Data(text.utf8).base64EncodedString() }

    @Test("the right credentials pass; followed by NUL bytes (1, 256, 512 of them), shortened or changed they do not")
    func exactBytes() {
        let basic = BasicAuthentication(username: "bank", password: "s3cret-Password")
        #expect(basic.accepts(header("bank:s3cret-Password")))
        for padding in [1, 256, 512] {
            #expect(!basic.accepts(header("bank:s3cret-Password" + String(repeating: "\0", count: padding))), "\(padding) NULs")
        }
        #expect(!basic.accepts(header("bank:s3cret-Passwor")))
        #expect(!basic.accepts(header("bank:s3cret-PasswOrd")))
        #expect(!basic.accepts(header("")))
        #expect(!basic.accepts(nil))
        #expect(!BasicAuthentication.constantTimeEqual(Array("ab".utf8), Array(("ab" + String(repeating: "\0", count: 256)).utf8)))
    }

    @Test("failures are counted per address and credential: one user's ten use up that user's minute there, not another's")
    func failuresThrottled() {
        let limit = AddressRateLimit(perMinute: 10, clock: { 100 })
        for _ in 0..<10 { #expect(limit.take("192.0.2.1", credential: "bank") == nil) }
        #expect(limit.take("192.0.2.1", credential: "bank") != nil)
        #expect(limit.take("192.0.2.1", credential: "other") == nil)
        #expect(limit.take("192.0.2.2", credential: "bank") == nil)
    }

    @Test("the user name a Basic header presents; nil for anything else")
    func username() {
        #expect(BasicAuthentication.username("Basic " + Data("bank:pa:ss".utf8).base64EncodedString()) == "bank")
        #expect(BasicAuthentication.username("Basic " + Data(String(repeating: "u", count: 100).utf8).base64EncodedString())?.count == 64)
        #expect(BasicAuthentication.username("Bearer abc") == nil)
        #expect(BasicAuthentication.username("Basic !!!") == nil)
    }
}
