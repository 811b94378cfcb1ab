import Foundation
import Synchronization

/// A request's body, which the handler that decodes it may take for itself so that its memory
/// goes as soon as it is decoded rather than when the whole request is answered: a send of a
/// million recipients is a 33 MiB body, held otherwise while its deliveries are stored and its
/// 54 MiB answer is written. Shared by every copy of the request; once taken, it is empty for
/// all of them.
package final class RequestBody: Sendable {
    private let data: Mutex<Data>

    package init(_ data: Data) {
        self.data = Mutex(data)
    }

    /// The body as it is now (empty once taken).
    package var bytes: Data { data.withLock { $0 } }

    /// The body, leaving it empty.
    package func take() -> Data {
        data.withLock { data in
            let taken = data
            data = Data()
            return taken
        }
    }
}
