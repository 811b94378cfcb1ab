import Foundation
import OutboundHTTP
import PigeonDomain
import Synchronization

/// Plays Apple Wallet on simulated phones (CONTRACT §7): told about a device and its passes, it
/// registers them with the gateway's PassKit web service as Wallet does when a pass is added;
/// when the simulator's APNs side accepts a push on a pass type's topic for one of its devices,
/// the device asks which passes changed since its tag and downloads each with
/// `If-Modified-Since`, after the device's delay — or never, so that the gateway's fetch
/// timeout, re-pushes and expiry run without Apple. ``refresh(device:)`` is a Wallet refreshed
/// by hand (a late fetch).
package final class WalletSimulator: Sendable {
    /// A pass in a simulated Wallet.
    package struct Card: Sendable, Equatable {
        package var pass: PassIdentity
        package var authenticationToken: String

        package init(pass: PassIdentity, authenticationToken: String) {
            self.pass = pass
            self.authenticationToken = authenticationToken
        }
    }

    /// How a device answers an update push.
    package enum Behaviour: Sendable, Equatable {
        /// Asks and downloads after this many milliseconds.
        case fetch(afterMilliseconds: Int)
        /// Ignores update pushes (switched off, out of coverage).
        case never
    }

    /// A download a device made.
    package struct Fetch: Sendable, Equatable {
        package var device: String
        package var pass: PassIdentity
        /// 200 (a pass), 304 (it had this version) or the error status.
        package var status: Int
        package var bytes: Int
        package var lastModified: String?
    }

    /// A simulated Wallet.
    struct Device: Sendable {
        var id: String
        var pushToken: String
        /// The passes' `webServiceURL` (the gateway's `…/passkit`).
        var webServiceURL: String
        var cards: [Card]
        var behaviour: Behaviour
        /// The tag each pass type last answered with.
        var tags: [String: String] = [:]
        /// The `Last-Modified` each pass was last downloaded with.
        var lastModified: [PassIdentity: String] = [:]
    }

    private struct State {
        var devices: [String: Device] = [:]
        var fetches = DeliveryLog<Fetch>()
        /// Reactions to pushes under way, cancelled by ``stop()``.
        var running: [UUID: Task<Void, Never>] = [:]
        var stopped = false
        /// Made when the first device is added: most simulators never play a Wallet, and each
        /// client has a thread.
        var client: HTTP2Client?
    }

    private let state = Mutex(State())
    private let caFile: String?

    /// `caFile`: the CA a gateway's HTTPS listener is checked against (nil for plain HTTP).
    package init(caFile: String? = nil) {
        self.caFile = caFile
    }

    /// The HTTP client Wallets call the gateway with; nil once stopped.
    private var http: HTTP2Client? {
        state.withLock { state in
            guard !state.stopped else { return nil }
            if state.client == nil {
                state.client = try? HTTP2Client(configuration: .init(maxConnections: 4, maxStreamsPerConnection: 100, timeout: .seconds(30),
                                                                     caFile: caFile, threadName: "sim-wallet"))
            }
            return state.client
        }
    }

    /// Downloads made so far, oldest first.
    package var fetches: [Fetch] { state.withLock { $0.fetches.entries } }

    /// Adds (or replaces) a device and registers each of its passes with the gateway; returns
    /// the web service's status for each registration, in order.
    @discardableResult
    package func addDevice(id: String, pushToken: String, webServiceURL: String, cards: [Card],
                          behaviour: Behaviour = .fetch(afterMilliseconds: 0)) async -> [Int] {
        let base = webServiceURL.hasSuffix("/") ? String(webServiceURL.dropLast()) : webServiceURL
        state.withLock { $0.devices[pushToken] = Device(id: id, pushToken: pushToken, webServiceURL: base, cards: cards, behaviour: behaviour) }
        var statuses: [Int] = []
        for card in cards {
            let url = "\(base)/v1/devices/\(id)/registrations/\(card.pass.passTypeIdentifier)/\(card.pass.serialNumber)"
            let body = Data(#"{"pushToken":"\#(pushToken)"}"#.utf8)
            let response = try? await http?.send(url: url, headers: ["authorization": "ApplePass \(card.authenticationToken)",
                                                                    "content-type": "application/json"], body: body)
            statuses.append(response?.status ?? 0)
        }
        return statuses
    }

    /// Changes how a device answers update pushes.
    package func setBehaviour(_ behaviour: Behaviour, pushToken: String) {
        state.withLock { $0.devices[pushToken]?.behaviour = behaviour }
    }

    /// The simulator's APNs side accepted a push: a Wallet device reacts to its pass types' topics.
    func pushAccepted(token: String, topic: String?) {
        guard let topic else { return }
        guard let device = state.withLock({ $0.devices[token] }), case .fetch(let delay) = device.behaviour,
              device.cards.contains(where: { $0.pass.passTypeIdentifier == topic }) else { return }
        inBackground { [self] in
            if delay > 0 { try? await Task.sleep(for: .milliseconds(delay)) }
            if !Task.isCancelled { await update(pushToken: token, passType: topic) }
        }
    }

    /// Runs `work` as a task that ``stop()`` cancels (the admin calls of a synchronous server).
    func inBackground(_ work: @escaping @Sendable () async -> Void) {
        let id = UUID()
        state.withLock { current in
            guard !current.stopped else { return }
            current.running[id] = Task { [self] in
                await work()
                _ = self.state.withLock { $0.running.removeValue(forKey: id) }
            }
        }
    }

    /// What Wallet does for one pass type of a device now, whatever its behaviour: asks which
    /// passes changed since its tag, then downloads each one.
    package func refresh(pushToken: String, passType: String) async {
        await update(pushToken: pushToken, passType: passType)
    }

    private func update(pushToken: String, passType: String) async {
        guard let device = state.withLock({ $0.devices[pushToken] }) else { return }
        var url = "\(device.webServiceURL)/v1/devices/\(device.id)/registrations/\(passType)"
        if let tag = device.tags[passType] { url += "?passesUpdatedSince=\(tag)" }
        guard let response = try? await http?.send(url: url, method: "GET", headers: [:], body: Data()), response.status == 200,
              let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any],
              let serials = object["serialNumbers"] as? [String] else { return }
        if let tag = object["lastUpdated"] as? String {
            state.withLock { $0.devices[pushToken]?.tags[passType] = tag }
        }
        for serial in serials {
            let pass = PassIdentity(passTypeIdentifier: passType, serialNumber: serial)
            guard let card = device.cards.first(where: { $0.pass == pass }) else { continue }
            await download(card, device: device)
        }
    }

    private func download(_ card: Card, device: Device) async {
        var headers = ["authorization": "ApplePass \(card.authenticationToken)"]
        if let modified = state.withLock({ $0.devices[device.pushToken]?.lastModified[card.pass] }) { headers["if-modified-since"] = modified }
        let url = "\(device.webServiceURL)/v1/passes/\(card.pass.passTypeIdentifier)/\(card.pass.serialNumber)"
        let response = try? await http?.send(url: url, method: "GET", headers: headers, body: Data(), wantHeaders: ["last-modified"])
        let lastModified = response?.headers["last-modified"]
        state.withLock { state in
            if response?.status == 200, let lastModified { state.devices[device.pushToken]?.lastModified[card.pass] = lastModified }
            state.fetches.append(Fetch(device: device.id, pass: card.pass, status: response?.status ?? 0,
                                       bytes: response?.body.count ?? 0, lastModified: lastModified))
        }
    }

    /// Cancels reactions under way and closes the client.
    package func stop() {
        let (running, client) = state.withLock { state -> ([Task<Void, Never>], HTTP2Client?) in
            state.stopped = true
            defer { state.client = nil }
            return (Array(state.running.values), state.client)
        }
        running.forEach { $0.cancel() }
        client?.shutdown(abandonRunning: true)
    }
}

extension WalletSimulator {
    /// The admin calls on the simulator's port:
    /// - `POST /simulator/wallet/devices` `{"deviceLibraryIdentifier", "pushToken", "webServiceURL",
    ///   "passes": [{"passTypeIdentifier", "serialNumber", "authenticationToken"}],
    ///   "fetchDelayMilliseconds": N}` (or `"fetch": "never"`): a Wallet that registers its passes
    ///   now (202; `GET …/fetches` and the gateway tell the rest);
    /// - `POST /simulator/wallet/refresh` `{"pushToken", "passTypeIdentifier"}`: a Wallet
    ///   refreshed by hand;
    /// - `GET /simulator/wallet/fetches`: the downloads, as JSON lines.
    func handleAdmin(_ request: H2Server.Request) -> H2Server.Response {
        let object = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] ?? [:]
        switch request.path {
        case "/simulator/wallet/devices":
            guard let id = object["deviceLibraryIdentifier"] as? String, let token = object["pushToken"] as? String,
                  let url = object["webServiceURL"] as? String, let passes = object["passes"] as? [[String: Any]] else {
                return .json(400, #"{"error":"expected deviceLibraryIdentifier, pushToken, webServiceURL and passes"}"#)
            }
            let cards = passes.compactMap { pass -> Card? in
                guard let type = pass["passTypeIdentifier"] as? String, let serial = pass["serialNumber"] as? String,
                      let token = pass["authenticationToken"] as? String else { return nil }
                return Card(pass: PassIdentity(passTypeIdentifier: type, serialNumber: serial), authenticationToken: token)
            }
            let behaviour: Behaviour = object["fetch"] as? String == "never"
                ? .never : .fetch(afterMilliseconds: (object["fetchDelayMilliseconds"] as? NSNumber)?.intValue ?? 0)
            // Answered once every registration is done (a walkthrough's next update then finds
            // the device), with each one's status from the gateway; at most 30 s.
            let done = DispatchSemaphore(value: 0)
            let statuses = Mutex<[Int]?>(nil)
            inBackground { [self] in
                let answered = await addDevice(id: id, pushToken: token, webServiceURL: url, cards: cards, behaviour: behaviour)
                statuses.withLock { $0 = answered }
                done.signal()
            }
            guard done.wait(timeout: .now() + 30) == .success, let answered = statuses.withLock({ $0 }) else {
                return .json(504, #"{"error":"the registrations did not finish within 30 s"}"#)
            }
            let registrations = zip(cards, answered).map { card, status in
                ["passTypeIdentifier": card.pass.passTypeIdentifier, "serialNumber": card.pass.serialNumber, "status": status] as [String: Any]
            }
            let body = (try? JSONSerialization.data(withJSONObject: ["passes": cards.count, "registrations": registrations], options: [.sortedKeys])) ?? Data("{}".utf8)
            let registered = answered.allSatisfy { $0 == 200 || $0 == 201 }
            return H2Server.Response(status: registered ? 200 : 502, headers: ["content-type": "application/json"], body: body)
        case "/simulator/wallet/refresh":
            guard let token = object["pushToken"] as? String, let type = object["passTypeIdentifier"] as? String else {
                return .json(400, #"{"error":"expected pushToken and passTypeIdentifier"}"#)
            }
            inBackground { [self] in await refresh(pushToken: token, passType: type) }
            return .json(202, "{}")
        default:
            var lines = ""
            for fetch in fetches {
                let line: [String: Any] = ["device": fetch.device, "pass": fetch.pass.description, "status": fetch.status, "bytes": fetch.bytes]
                if let data = try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]) { lines += String(decoding: data, as: UTF8.self) + "\n" }
            }
            return H2Server.Response(status: 200, headers: ["content-type": "application/x-ndjson"], body: Data(lines.utf8))
        }
    }
}
