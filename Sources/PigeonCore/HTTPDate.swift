import Foundation

/// HTTP dates (RFC 9110 IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`) for Wallet's `Last-Modified`
/// and `If-Modified-Since` and the push services' `Retry-After`, written and read without a
/// locale-dependent formatter (one made per call cost more than the rest of a throttled push).
package enum HTTPDate {
    private static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `date` in whole seconds.
    package static func format(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let weekday = days[Int((seconds / 86_400 % 7 + 7) % 7)]
        return String(format: "%@, %02d %@ %04d %02d:%02d:%02d GMT", weekday, parts.tm_mday, months[Int(parts.tm_mon)],
                      Int(parts.tm_year) + 1900, parts.tm_hour, parts.tm_min, parts.tm_sec)
    }

    /// An IMF-fixdate, or nil for anything else (the obsolete forms are not sent by Wallet; a
    /// date that cannot be read only means the whole pass is sent).
    package static func parse(_ text: String) -> Date? {
        let fields = text.split(separator: " ")
        guard text.utf8.count <= 40, fields.count == 6, fields[0].hasSuffix(","), fields[5] == "GMT",
              let day = Int(fields[1]), (1...31).contains(day), let month = months.firstIndex(of: String(fields[2])),
              let year = Int(fields[3]), (1970...9999).contains(year)
        else { return nil }
        let clock = fields[4].split(separator: ":")
        guard clock.count == 3, let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }
}
