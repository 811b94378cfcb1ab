/// What a push token must look like for each platform, checked when an app registers so that a
/// malformed token is refused with a clear message instead of failing later at Apple or Google.
package enum PushTokenFormat {
    /// APNs device tokens: hexadecimal, 32 bytes today; Apple allows for longer ones.
    package static let apnsLength = 64...200
    /// FCM registration tokens: about 160 characters of letters, digits and `-_:`.
    package static let fcmLength = 32...4096
    /// RuStore and Huawei push tokens: strings of the same alphabet, of a few dozen to a few
    /// hundred characters today.
    package static let rustoreLength = 16...4096

    /// Why `token` is not a valid push token for `platform`, or nil when it is.
    package static func problem(with token: String, for platform: Platform) -> String? {
        switch platform {
        case .ios:
            guard apnsLength.contains(token.utf8.count) else {
                return "an APNs device token has \(apnsLength.lowerBound)–\(apnsLength.upperBound) hexadecimal digits, got \(token.utf8.count) characters"
            }
            guard token.utf8.count % 2 == 0, token.utf8.allSatisfy(isHexDigit) else {
                return "an APNs device token is hexadecimal (0-9, a-f), an even number of digits"
            }
        case .android:
            guard fcmLength.contains(token.utf8.count) else {
                return "an FCM registration token has \(fcmLength.lowerBound)–\(fcmLength.upperBound) characters, got \(token.utf8.count)"
            }
            guard token.utf8.allSatisfy(isFCMCharacter) else {
                return "an FCM registration token contains only letters, digits, '-', '_' and ':'"
            }
        case .web:
            // The subscription object is checked as a whole at registration (WebPushSubscription).
            guard WebPushSubscription(stored: token) != nil else { return "a Web Push pushToken is the browser's subscription object" }
        case .rustore, .huawei:
            let service = platform == .rustore ? "a RuStore push token" : "a Huawei Push Kit token"
            guard rustoreLength.contains(token.utf8.count) else {
                return "\(service) has \(rustoreLength.lowerBound)–\(rustoreLength.upperBound) characters, got \(token.utf8.count)"
            }
            guard token.utf8.allSatisfy(isFCMCharacter) else {
                return "\(service) contains only letters, digits, '-', '_' and ':'"
            }
        }
        return nil
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }

    private static func isFCMCharacter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: ":")
    }
}
