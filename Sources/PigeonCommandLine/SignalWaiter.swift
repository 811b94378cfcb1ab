import Dispatch
import Foundation
import PigeonServer

/// Turns process signals into an awaitable event. The signals are ignored by default handling
/// from construction on, so none is lost between start-up and the first `wait()`.
package final class SignalWaiter: @unchecked Sendable {
    // @unchecked: `sources` is written once in init and only read (cancelled) in deinit.
    private let sources: [any DispatchSourceSignal]
    private let stream: AsyncStream<Int32>

    package init(signals: [Int32]) {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        self.stream = stream
        var sources: [any DispatchSourceSignal] = []
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }

    /// The next signal received.
    package func wait() async -> Int32 {
        for await number in stream { return number }
        return 0
    }

    deinit {
        sources.forEach { $0.cancel() }
    }
}
