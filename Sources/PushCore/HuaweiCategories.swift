/// Huawei Push Kit's message classification (self-classification rights): which `android.category`
/// each notification goes with. Without one, Huawei counts a notification as information and
/// marketing, capped at a few a device a day; a one-time code sent so can be throttled with the
/// bank's newsletter. Set only for the types the bank holds the right for.
package struct HuaweiCategories: Sendable, Equatable {
    /// The categories Push Kit knows (its self-classification standard).
    package static let known: Set<String> = [
        "IM", "VOIP", "SUBSCRIPTION", "TRAVEL", "HEALTH", "WORK", "ACCOUNT", "EXPRESS", "FINANCE",
        "DEVICE_REMINDER", "MAIL", "PLAY_VOICE", "CUSTOMER_SERVICE", "MARKETING",
    ]

    /// `hmsCategory`: the service category of one-time codes (`PIN_CODE`), e.g. `ACCOUNT` or `FINANCE`.
    package var codes: String?
    /// `hmsCategories`: a category per notification type (`UNIVERSAL=MARKETING`), ahead of ``codes``.
    package var byType: [String: String]

    package init(codes: String? = nil, byType: [String: String] = [:]) {
        self.codes = codes
        self.byType = byType
    }

    /// The category of a notification of `type` (its `type` data member), or nil for none.
    package func category(forType type: String?) -> String? {
        guard let type else { return nil }
        if let category = byType[type] { return category }
        return type == "PIN_CODE" ? codes : nil
    }
}
