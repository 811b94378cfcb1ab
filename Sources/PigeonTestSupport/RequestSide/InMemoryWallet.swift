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
        var devices: [(device: String, pushToken: String, state: PassDeliveryState)] = []
    }

    private let passes = Mutex<[PassIdentity: Pass]>([:])
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
            for index in stored.devices.indices { stored.devices[index].state = .queued }
            passes[pass] = stored
            return .stored(version: stored.version, queued: stored.devices.count)
        }
    }

    package func status(_ pass: PassIdentity) async throws -> (version: Int64, devices: [(device: String, state: PassDeliveryState)])? {
        passes.withLock { passes in
            passes[pass].map { ($0.version, $0.devices.map { ($0.device, $0.state) }) }
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
            stored.devices.append((device, pushToken, .registered))
            passes[pass] = stored
            return .created
        }
    }

    package func unregister(device: String, from pass: PassIdentity, authenticationDigest: Data) async throws -> Bool {
        passes.withLock { passes in
            guard var stored = passes[pass], stored.digest == authenticationDigest,
                  let index = stored.devices.firstIndex(where: { $0.device == device }) else { return false }
            stored.devices.remove(at: index)
            passes[pass] = stored
            return true
        }
    }

    package func serialsUpdated(device: String, passType: String, since tag: Int64?) async throws -> (serials: [String], lastUpdated: Int64)? {
        passes.withLock { passes in
            let mine = passes.filter { $0.key.passTypeIdentifier == passType && $0.value.devices.contains { $0.device == device } }
            let changed = mine.filter { tag == nil || Int64($0.value.modifiedAt.timeIntervalSince1970) > tag! }
            guard !changed.isEmpty else { return nil }
            let last = changed.values.map { Int64($0.modifiedAt.timeIntervalSince1970) }.max() ?? 0
            return (changed.keys.map(\.serialNumber).sorted(), last)
        }
    }

    package func fetch(_ pass: PassIdentity, authenticationDigest: Data, ifModifiedSince: Date?) async throws -> PassStore.FetchResult {
        passes.withLock { passes in
            guard let stored = passes[pass], stored.digest == authenticationDigest else { return .unauthorized }
            let modified = Date(timeIntervalSince1970: stored.modifiedAt.timeIntervalSince1970.rounded(.down))
            if let ifModifiedSince, ifModifiedSince >= modified { return .notModified(modifiedAt: modified) }
            return .pass(content: stored.content, modifiedAt: modified, version: stored.version)
        }
    }
}
