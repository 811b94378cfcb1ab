import Foundation
import PigeonBankService
import PigeonDomain
import PigeonStore
import PigeonWallet
import Synchronization

/// Wallet passes in memory, as the bank updates them and Wallets register for and download
/// them: versions, the pass's authentication token (by digest, never changed once set), each
/// registered Wallet's state. For the unit tier's PassKit and `updatePass` tests.
package final class InMemoryWallet: PassKeeping, WalletRegistering, Sendable {
    private struct Pass {
        var digest: Data
        var content: Data
        var version: Int64
        var modifiedAt: Date
        var devices: [Registration] = []
    }

    /// A Wallet registered for a pass; `listed` orders the Wallets told the pass changed.
    private struct Registration {
        var device: String
        var pushToken: String
        var state: PassDeliveryState
        var listed: Int?
    }

    /// States in which a Wallet has not downloaded the pass's current version.
    private static let waiting: Set<PassDeliveryState> = [.queued, .sent, .expired, .sendingFailed, .registered]

    private let passes = Mutex<[PassIdentity: Pass]>([:])
    private let listings = Mutex(0)
    private let clock: @Sendable () -> Date

    package init(clock: @escaping @Sendable () -> Date = Date.init) {
        self.clock = clock
    }

    package func update(_ pass: PassIdentity, authenticationDigest: Data, content: Data) async throws -> PassStore.UpdateResult {
        let now = clock()
        return passes.withLock { passes in
            guard var stored = passes[pass] else {
                passes[pass] = Pass(digest: authenticationDigest, content: content, version: 1, modifiedAt: now)
                return .stored(version: 1, queued: 0)
            }
            guard stored.digest == authenticationDigest else { return .tokenMismatch }
            stored.version += 1
            stored.content = content
            stored.modifiedAt = max(now, stored.modifiedAt.addingTimeInterval(1))
            for index in stored.devices.indices {
                stored.devices[index].state = .queued
                stored.devices[index].listed = nil
            }
            passes[pass] = stored
            return .stored(version: stored.version, queued: stored.devices.count)
        }
    }

    package func status(_ pass: PassIdentity) async throws -> (version: Int64, devices: [(device: String, state: PassDeliveryState)])? {
        passes.withLock { passes in
            passes[pass].map { ($0.version, $0.devices.map { ($0.device, $0.state) }.sorted { $0.device < $1.device }) }
        }
    }

    package func register(device: String, pushToken: String, for pass: PassIdentity, authenticationDigest: Data,
                          limits: PassStore.RegistrationLimits) async throws -> PassStore.RegistrationResult {
        passes.withLock { passes in
            guard var stored = passes[pass], stored.digest == authenticationDigest else { return .unauthorized }
            if stored.devices.contains(where: { $0.device == device }) { return .alreadyRegistered }
            let perDevice = passes.values.filter { $0.devices.contains { $0.device == device } }.count
            guard perDevice < limits.perDevice else { return .limitReached("this device has \(limits.perDevice) passes registered") }
            if stored.devices.count >= limits.perPass { stored.devices.removeFirst() }
            stored.devices.append(Registration(device: device, pushToken: pushToken, state: .registered))
            passes[pass] = stored
            return .created
        }
    }

    package func unregister(device: String, from pass: PassIdentity, authenticationDigest: Data) async throws -> Bool {
        passes.withLock { passes in
            guard var stored = passes[pass], stored.digest == authenticationDigest else { return false }
            stored.devices.removeAll { $0.device == device }
            passes[pass] = stored
            return true
        }
    }

    /// As the PostgreSQL store: the passes changed after `tag` (all without one) and those whose
    /// current version this Wallet has not downloaded, each marked as listed (its download comes
    /// next); the newest tag of all its passes of the type; nil when it has none.
    package func serialsUpdated(device: String, passType: String, since tag: Int64?) async throws -> (serials: [String], lastUpdated: Int64)? {
        let listing = listings.withLock { count in
            count += 1
            return count
        }
        return passes.withLock { passes in
            let mine = passes.filter { $0.key.passTypeIdentifier == passType && $0.value.devices.contains { $0.device == device } }
            guard let last = mine.values.map({ Int64($0.modifiedAt.timeIntervalSince1970) }).max() else { return nil }
            var listed: [String] = []
            for (pass, var stored) in mine {
                guard let index = stored.devices.firstIndex(where: { $0.device == device }) else { continue }
                let changed = tag.map { Int64(stored.modifiedAt.timeIntervalSince1970) > $0 } ?? true
                let undownloaded = Self.waiting.subtracting([.registered]).contains(stored.devices[index].state)
                guard changed || undownloaded else { continue }
                stored.devices[index].listed = listing
                passes[pass] = stored
                listed.append(pass.serialNumber)
            }
            return (listed.sorted(), last)
        }
    }

    /// As the PostgreSQL store: the download is attributed to one Wallet still waiting for the
    /// version — the first told it changed, else one pushed, else one that only registered —
    /// which becomes FETCHED, for a 304 too.
    package func fetch(_ pass: PassIdentity, authenticationDigest: Data, ifModifiedSince: Date?) async throws -> PassStore.FetchResult {
        passes.withLock { passes in
            guard var stored = passes[pass], stored.digest == authenticationDigest else { return .unauthorized }
            let fetcher = stored.devices.indices.filter { Self.waiting.contains(stored.devices[$0].state) }.min { left, right in
                let a = stored.devices[left], b = stored.devices[right]
                return (a.listed == nil ? 1 : 0, a.state == .registered ? 1 : 0, a.listed ?? 0, left)
                    < (b.listed == nil ? 1 : 0, b.state == .registered ? 1 : 0, b.listed ?? 0, right)
            }
            if let fetcher {
                stored.devices[fetcher].state = .fetched
                passes[pass] = stored
            }
            let modified = Date(timeIntervalSince1970: stored.modifiedAt.timeIntervalSince1970.rounded(.down))
            if let ifModifiedSince, ifModifiedSince >= modified { return .notModified(modifiedAt: modified) }
            return .pass(content: stored.content, modifiedAt: modified, version: stored.version)
        }
    }
}
