import Foundation
import OutboundHTTP
import PushCore
import Synchronization

/// Sends a push batch through an ``HTTP2Client`` as one submission, in at most two rounds: the
/// pushes refused because the credential they carried was refused (an APNs provider token, an
/// FCM access token) are held back and, once `replace` has a new credential, sent once more
/// with it. What every transport does the same way; the service-specific parts come in as
/// closures.
struct BatchRounds<Credential: Equatable & Sendable> {
    /// The credential to send with, or the outcome every push gets when there is none.
    var credential: () async -> Result<Credential, CredentialUnavailable>
    /// A push's request with `credential`, or the outcome it gets without being sent.
    var request: (PushBatch.Push, Credential) -> Result<HTTP2Client.Request, RequestRefused>
    /// The outcome of an answer (or a transport failure) to a push's request sent with `credential`.
    var outcome: @Sendable (Result<HTTP2Client.Response, HTTP2Client.TransportError>, Credential, PushBatch.Push) -> PushOutcome
    /// Called after the service refused `credential`: true when a new one replaces it.
    var replace: (Credential) async -> Bool
    /// The time after which a push must not be sent (its message's expiry), if any.
    var deadline: (PushBatch.Push) -> Date? = { _ in nil }

    func send(_ pushes: [PushBatch.Push], client: HTTP2Client, maxInFlight: Int, onResult: @escaping @Sendable (PushBatchResult) -> Void) async {
        var indices = Array(pushes.indices)
        for round in 0..<2 {
            let current: Credential
            switch await credential() {
            case .success(let value): current = value
            case .failure(let unavailable):
                for index in indices { onResult(PushBatchResult(index: index, outcome: unavailable.outcome, duration: nil)) }
                return
            }
            var requests: [HTTP2Client.Request] = []
            var sent: [Int] = []
            requests.reserveCapacity(indices.count)
            sent.reserveCapacity(indices.count)
            for index in indices {
                switch request(pushes[index], current) {
                case .success(var request):
                    request.notAfter = deadline(pushes[index])
                    requests.append(request)
                    sent.append(index)
                case .failure(let refused):
                    onResult(PushBatchResult(index: index, outcome: refused.outcome, duration: nil))
                }
            }
            let lastRound = round == 1
            let positions = sent
            let outcome = self.outcome
            let refused = Mutex<[PushBatchResult]>([])
            await client.send(requests, maxInFlight: maxInFlight) { position, response in
                let push = pushes[positions[position]]
                let result: PushBatchResult
                if case .failure(let error) = response, error.code == HTTP2Client.expiredCode {
                    // Its time ran out before a stream took it: nothing was sent.
                    result = PushBatchResult(index: positions[position], outcome: .expired, duration: nil)
                } else if case .failure(let error) = response, error.code == HTTP2Client.notStartedCode {
                    // The sender stopped (a cancelled task) before its turn: nothing was sent.
                    result = PushBatchResult(index: positions[position], outcome: .deferred, duration: nil)
                } else {
                    result = PushBatchResult(index: positions[position], outcome: outcome(response, current, push),
                                             duration: try? response.get().duration)
                }
                if case .refreshCredentials = result.outcome {
                    refused.withLock { $0.append(result) }
                    // Held back for the second round; in the second, answered as it is.
                    if !lastRound { return }
                }
                onResult(result)
            }
            let withheld = refused.withLock { $0 }
            guard !withheld.isEmpty else { return }
            let replaced = await replace(current)
            if lastRound { return }
            guard replaced else {
                withheld.forEach(onResult)
                return
            }
            indices = withheld.map(\.index)
        }
    }
}

/// No credential could be had: the outcome every push of the batch gets.
package struct CredentialUnavailable: Error {
    package var outcome: PushOutcome
    package init(outcome: PushOutcome) { self.outcome = outcome }
}

/// A push that is not sent (its message cannot be built, its token cannot be addressed): the
/// outcome it gets instead.
package struct RequestRefused: Error {
    package var outcome: PushOutcome
    package init(outcome: PushOutcome) { self.outcome = outcome }
    package init(_ error: PushMessageError) { outcome = .failed(reason: error.description) }
}
