/// The APNs environment a device's token was issued for: a development build's token works
/// only against Apple's sandbox host, a store build's only against production.
package enum PushEnvironment: String, Sendable, CaseIterable {
    case production
    case sandbox
}

/// Where a device's pushes go: its platform's push service, with its app's credentials, in its
/// environment. The engine keeps one sender per route.
package struct PushRoute: Hashable, Sendable, CustomStringConvertible {
    package var platform: Platform
    /// The app's name in `server.conf` (`app.<name>.…`); ``PushRoute/defaultApp`` for the
    /// top-level keys.
    package var appId: String
    package var environment: PushEnvironment

    /// The app configured by the top-level keys.
    package static let defaultApp = ""

    package init(platform: Platform, appId: String = PushRoute.defaultApp, environment: PushEnvironment = .production) {
        self.platform = platform
        self.appId = appId
        self.environment = environment
    }

    /// The app's name for logs and metric labels (`default` for the top-level keys).
    package var appLabel: String { appId.isEmpty ? "default" : appId }

    package var description: String { "\(platform.rawValue) \(appLabel) \(environment.rawValue)" }

    /// Hashes the app's name only: a gateway has a handful of routes, told apart by `==`, and
    /// the engine hashes a push's route several times (its holds, its tally, its latencies),
    /// where the default would hash the two `String`-backed enums' raw text too.
    package func hash(into hasher: inout Hasher) {
        hasher.combine(appId)
    }
}
