import Foundation
import PigeonCore
import PigeonDomain

/// What an operator does in the console, the same for a page's form and a JSON call, each
/// recorded in the audit trail (CONTRACT §10) with who, from where, to what, why and how it
/// ended. Role checks happen before (the caller knows the channel's way to refuse); nothing
/// revealed is ever written to the trail or the log.
package struct ConsoleActions: Sendable {
    /// Who acts, from which address.
    package struct Actor: Sendable {
        package var person: ConsoleOperator
        package var address: String
    }

    /// How a revoke ended.
    package enum RevokeOutcome: Sendable {
        case revoked(user: String, device: ConsoleRows.DeviceSummary)
        case gone
        case noReason
    }

    /// How a reveal ended.
    package enum RevealOutcome: Sendable {
        case revealed(ConsoleNotificationView)
        case notFound
        /// A confidential notification: its content is for the phone alone (CONTRACT §8).
        case confidential
    }

    let accounts: any ConsoleAccountSource
    let data: any ConsoleSource
    let audit: any AuditTrail
    let logger: Logger

    /// Checks an operator's name and password; records the sign-in (unless `recordSuccess` is
    /// false: a JSON call's Basic credentials sign in on every call), or the failed one.
    package func signIn(username: String, password: String, address: String, channel: String, recordSuccess: Bool = true) async -> ConsoleSignIn {
        let result = await accounts.signIn(username: username, password: password)
        let name = LogText.escaped(username, limit: 64)
        // A refused name may be a password typed into the wrong field: kept shortened.
        let refusedName = Redaction.refusedName(username)
        switch result {
        case .accepted(let person):
            guard recordSuccess else { break }
            logger.notice("console: signed in", metadata: ["operator": name, "role": person.role.rawValue, "peer": address, "channel": channel])
            await record(AuditEntry(operatorName: person.name, role: person.role.rawValue, address: address, action: .signIn, target: channel, outcome: "signed in"))
        case .refused:
            logger.warning("console: sign-in refused", metadata: ["peer": address, "username": LogText.escaped(refusedName, limit: 64), "channel": channel])
            await record(AuditEntry(operatorName: refusedName, role: "", address: address, action: .signInFailed, target: channel, outcome: "wrong username or password"))
        case .unavailable(let reason):
            logger.error("console: sign-in could not be checked", metadata: ["peer": address, "username": LogText.escaped(refusedName, limit: 64), "reason": reason])
            await record(AuditEntry(operatorName: refusedName, role: "", address: address, action: .signInFailed, target: channel, outcome: "not checked: \(reason)"))
        }
        return result
    }

    /// Looks up a notification to show unmasked. The trail records the reveal before anything is
    /// shown: when it cannot be written, nothing is revealed (the error is thrown).
    package func reveal(_ id: String, by actor: Actor, page: Int = 1) async throws -> RevealOutcome {
        guard let view = try await data.notification(id, page: page) else {
            try await audit.record(entry(actor, .reveal, target: id, outcome: "no such notification"))
            return .notFound
        }
        if view.notification.isConfidential {
            try await audit.record(entry(actor, .reveal, target: id, outcome: "refused: confidential"))
            return .confidential
        }
        try await audit.record(entry(actor, .reveal, target: id, outcome: "revealed"))
        logger.notice("console: notification content revealed", metadata: ["operator": actor.person.name, "notification": LogText.escaped(id, limit: 100)])
        return .revealed(view)
    }

    /// Removes a device (its authentication and push token stop working), with a reason of
    /// 1–200 characters.
    package func revoke(deviceId: Int64, user: String, reason: String, by actor: Actor) async throws -> RevokeOutcome {
        let reason = reason.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !reason.isEmpty, reason.count <= 200, !ControlCharacters.present(in: reason) else { return .noReason }
        guard let revoked = try await data.revoke(deviceId: deviceId, reason: "revoked in the console by \(actor.person.name): \(reason)") else {
            await record(entry(actor, .revoke, target: "\(user) device #\(deviceId)", reason: reason, outcome: "already gone"))
            return .gone
        }
        logger.notice("console: device revoked", metadata: [
            "operator": actor.person.name, "user": LogText.escaped(revoked.user, limit: 100), "device": LogText.escaped(revoked.device.deviceId, limit: 100),
            "platform": revoked.device.platform, "pushToken": Redaction.token(revoked.device.pushToken), "reason": LogText.escaped(reason, limit: 200)])
        await record(entry(actor, .revoke, target: "\(revoked.user) device \(revoked.device.deviceId)", reason: reason, outcome: "revoked"))
        return .revoked(user: revoked.user, device: revoked.device)
    }

    /// Moves a dead report back to the outbox; false when it is no longer a dead letter.
    package func requeue(_ report: Int64, by actor: Actor) async throws -> Bool {
        let moved = try await data.requeue(report: report)
        logger.notice("console: dead report re-queued", metadata: ["operator": actor.person.name, "report": String(report), "moved": String(moved)])
        await record(entry(actor, .requeue, target: "report \(report)", outcome: moved ? "re-queued" : "not a dead letter"))
        return moved
    }

    /// Sends a neutral push to each of `user`'s devices; records who sent it and what each device's
    /// push service said.
    package func testPush(user: String, by actor: Actor) async throws -> [ConsoleTestPush] {
        let results = try await data.testPush(user: user)
        let summary = results.isEmpty ? "no device" : Dictionary(grouping: results, by: \.state).sorted { $0.key < $1.key }
            .map { "\($0.key) \($0.value.count)" }.joined(separator: ", ")
        logger.notice("console: test push sent", metadata: ["operator": actor.person.name, "user": LogText.escaped(user, limit: 100), "outcome": summary])
        await record(entry(actor, .testPush, target: user, outcome: summary))
        return results
    }

    /// An action refused for the operator's role: logged, and in the trail when it is one the
    /// trail records (the configuration page is only logged).
    package func refused(_ right: ConsoleRole.Right, target: String, by actor: Actor) async {
        logger.warning("console: action refused for the operator's role", metadata: [
            "operator": actor.person.name, "role": actor.person.role.rawValue, "right": right.rawValue])
        let action: AuditEntry.Action? = switch right {
        case .reveal: .reveal
        case .revoke: .revoke
        case .requeue: .requeue
        case .testPush: .testPush
        case .read, .configuration: nil
        }
        guard let action else { return }
        await record(entry(actor, action, target: target, outcome: "refused: needs \(ConsoleRole.least(for: right).rawValue)"))
    }

    private func entry(_ actor: Actor, _ action: AuditEntry.Action, target: String, reason: String = "", outcome: String) -> AuditEntry {
        AuditEntry(operatorName: actor.person.name, role: actor.person.role.rawValue, address: actor.address, action: action,
                   target: target, reason: reason, outcome: outcome)
    }

    /// Records an action that already happened; a trail that cannot be written is logged as an
    /// error (the action stands).
    private func record(_ entry: AuditEntry) async {
        do {
            try await audit.record(entry)
        } catch {
            logger.error("console: the audit trail could not be written", metadata: [
                "action": entry.action.rawValue, "operator": LogText.escaped(entry.operatorName, limit: 64), "error": "\(error)"])
        }
    }
}
