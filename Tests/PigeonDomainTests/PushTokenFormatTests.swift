import Testing
@testable import PigeonDomain
import PigeonTestSupport

@Suite("Push token formats", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct PushTokenFormatTests {
    @Test("APNs tokens are even-length hexadecimal of 64 to 200 digits")
    func apns() {
        #expect(PushTokenFormat.problem(with: String(repeating: "aF", count: 32), for: .ios) == nil)
        #expect(PushTokenFormat.problem(with: String(repeating: "ab", count: 100), for: .ios) == nil)
        #expect(PushTokenFormat.problem(with: String(repeating: "ab", count: 31), for: .ios) != nil)
        #expect(PushTokenFormat.problem(with: String(repeating: "ab", count: 101), for: .ios) != nil)
        #expect(PushTokenFormat.problem(with: String(repeating: "ab", count: 32) + "a", for: .ios) != nil)
        #expect(PushTokenFormat.problem(with: String(repeating: "zz", count: 32), for: .ios) != nil)
        #expect(PushTokenFormat.problem(with: String(repeating: "ab", count: 31) + "é", for: .ios) != nil)
    }

    @Test("FCM tokens use letters, digits, '-', '_' and ':' only")
    func fcm() {
        let real = "dXp2Yk1hQzRtOlFvOW5v:APA91bH" + String(repeating: "x_Y-9", count: 26)
        #expect(PushTokenFormat.problem(with: real, for: .android) == nil)
        #expect(PushTokenFormat.problem(with: "short", for: .android) != nil)
        #expect(PushTokenFormat.problem(with: real + " ", for: .android) != nil)
        #expect(PushTokenFormat.problem(with: real + "\"", for: .android) != nil)
        #expect(PushTokenFormat.problem(with: String(repeating: "a", count: 4097), for: .android) != nil)
    }
}
