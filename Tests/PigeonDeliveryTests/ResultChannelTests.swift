import PigeonTestSupport
import Synchronization
import Testing
@testable import PigeonDelivery

@Suite("Result channel", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ResultChannelTests {
    @Test("results added quietly wait for a flush and come in one group; a flush with nothing new wakes nobody; finish hands over what was never flushed, then nil")
    func quietThenFlush() async {
        let channel = ResultChannel<Int>()
        let taken = Mutex<[[Int]]>([])
        let consumer = Task {
            while let group = await channel.next() { taken.withLock { $0.append(group) } }
        }
        // The consumer is waiting (or about to): quiet results do not wake it.
        channel.yieldQuietly(1)
        channel.yieldQuietly(2)
        channel.flush()
        #expect(await eventually { taken.withLock { $0.flatMap { $0 } } == [1, 2] })
        channel.flush()
        channel.yieldQuietly(3)
        channel.yieldQuietly(4)
        channel.finish()
        await consumer.value
        #expect(taken.withLock { $0.flatMap { $0 } } == [1, 2, 3, 4], "finish hands over the results never flushed")
    }

    @Test("a consumer waiting while results are added quietly stays waiting, the results buffered, until the flush hands them over in one group")
    func quietDoesNotWake() async {
        let channel = ResultChannel<Int>()
        let taken = Mutex<[Int]?>(nil)
        let consumer = Task {
            let group = await channel.next()
            taken.withLock { $0 = group }
        }
        #expect(await eventually { channel.waiting.consumer })
        channel.yieldQuietly(7)
        channel.yieldQuietly(8)
        #expect(channel.waiting == (consumer: true, results: 2), "a quiet result woke the consumer")
        channel.flush()
        await consumer.value
        #expect(taken.withLock { $0 } == [7, 8])
        #expect(channel.waiting == (consumer: false, results: 0))
    }
}
