import Foundation
import PigeonDomain

/// What the console shows and changes, behind a seam: ``ConsoleData`` reads PostgreSQL, the
/// metrics and the push clients in the gateway; the unit tier gives ``ConsoleEndpoint`` one in
/// memory, so sign-in, CSRF, masking and the JSON twins are tested without a database.
package protocol ConsoleSource: Sendable {
    /// The effective configuration, secrets redacted.
    var settings: [(key: String, value: String)] { get }
    /// The overview; a database that does not answer is shown as such, not thrown.
    func overview() async throws -> ConsoleOverview
    /// A notification with one page of its recipients; nil when there is no such notification.
    func notification(_ id: String, page: Int) async throws -> ConsoleNotificationView?
    /// A user's devices, waiting registrations, removed devices and recent notifications; nil for
    /// an empty user id.
    func user(_ user: String) async throws -> ConsoleUserView?
    /// One page of the reports waiting for the bank, and the dead letters.
    func outbox(page: Int) async throws -> ConsoleOutboxView
    /// Removes a device (its authentication and push token stop working), noting `reason`; nil
    /// when it is already gone.
    func revoke(deviceId: Int64, reason: String) async throws -> (user: String, device: ConsoleRows.DeviceSummary)?
    /// Moves a dead report back to the outbox; false when it is no longer a dead letter.
    func requeue(report: Int64) async throws -> Bool
    /// Sends a neutral test push to each of `user`'s devices and says, per device, what its push
    /// service answered (at most ``ConsoleTestPush/timeout`` each).
    func testPush(user: String) async throws -> [ConsoleTestPush]
}

/// What became of one device's test push (CONTRACT §10 "JSON actions").
package struct ConsoleTestPush: Sendable, Equatable {
    /// The text every test push carries: nothing of the customer's, nothing that looks like a code.
    package static let text = "Test from your bank's support"
    /// How long a push service has to answer.
    package static let timeout: Duration = .seconds(10)

    package var deviceId: String
    /// `SENT` (the push service accepted it), `INVALID_TOKEN`, `FAILED`, `TIMEOUT`, or
    /// `NOT_SERVED` (no push service of this gateway serves the device's platform and app).
    package var state: String
    package var lastError: String?

    package init(deviceId: String, state: String, lastError: String? = nil) {
        self.deviceId = deviceId
        self.state = state
        self.lastError = lastError
    }
}

/// The console's pages of rows: 50 a page, page numbers from URLs brought into range.
package enum ConsolePaging {
    package static let pageSize = 50
    /// The last page the console shows (50 million rows): a page number from a URL is brought
    /// into 1…this, so no arithmetic on it can overflow.
    package static let lastPage = 1_000_000

    /// The page a `page` parameter asks for: 1 when missing or not a number, within 1…``lastPage``.
    package static func pageNumber(_ text: String?) -> Int {
        guard let text, text.utf8.count <= 20, let number = Int(text) else { return 1 }
        return clamped(number)
    }

    /// `page` within 1…``lastPage``.
    package static func clamped(_ page: Int) -> Int { min(max(1, page), lastPage) }

    /// The first row of `page`.
    package static func offset(of page: Int) -> Int { (clamped(page) - 1) * pageSize }
}
