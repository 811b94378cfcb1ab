import Foundation
import PigeonTestSupport
import Testing
@testable import PushCore

/// `apns-id` values without `UUID()`: APNs' form, unique, and not the same in two senders.
@Suite("Push identifiers (apns-id)", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct PushIdentifiersTests {
    @Test("each is a lowercase version-4 UUID with the RFC 4122 variant, which Foundation parses back to itself")
    func form() throws {
        var random = SeededRandom(seed: 7)
        let identifiers = PushIdentifiers(random: &random)
        for _ in 0..<1_000 {
            let id = identifiers.next()
            #expect(id.count == 36)
            #expect(id.wholeMatch(of: /[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/) != nil, "\(id)")
            #expect(try #require(UUID(uuidString: id)).uuidString.lowercased() == id)
        }
    }

    @Test("a hundred thousand in a row, from several threads at once, are all different")
    func unique() async {
        let identifiers = PushIdentifiers()
        let all = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<25_000).map { _ in identifiers.next() } }
            }
            return await group.reduce(into: [String]()) { $0 += $1 }
        }
        #expect(all.count == 100_000)
        #expect(Set(all).count == 100_000)
    }

    @Test("two senders' sequences do not meet, and the digits follow the bits")
    func distinctSequences() {
        var first = SeededRandom(seed: 1), second = SeededRandom(seed: 2)
        let a = PushIdentifiers(random: &first), b = PushIdentifiers(random: &second)
        let fromA = Set((0..<1_000).map { _ in a.next() })
        #expect((0..<1_000).allSatisfy { _ in !fromA.contains(b.next()) })
        #expect(PushIdentifiers.format(high: 0x0123_4567_89AB_4DEF, low: 0x8FED_CBA9_8765_4321) == "01234567-89ab-4def-8fed-cba987654321")
    }

    @Test("the digits are Foundation's UUID text, lowercased, for any bits (zeros and all ones included)")
    func sameTextAsFoundation() {
        var random = SeededRandom(seed: 7)
        let samples = [(UInt64(0), UInt64(0)), (UInt64.max, UInt64.max)] + (0..<1_000).map { _ in (random.next() as UInt64, random.next() as UInt64) }
        for (high, low) in samples {
            let bytes = withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { $0.loadUnaligned(as: uuid_t.self) }
            #expect(PushIdentifiers.format(high: high, low: low) == UUID(uuid: bytes).uuidString.lowercased())
        }
    }
}
