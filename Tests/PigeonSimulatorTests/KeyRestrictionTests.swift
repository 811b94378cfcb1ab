import Foundation
@testable import PigeonSimulator
import Testing
import PigeonTestSupport

/// The simulator's APNs keys restricted as Apple's developer account allows since 2025.
@Suite("APNs key restrictions (simulator)", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct KeyRestrictionTests {
    typealias Restriction = APNsSimulator.KeyRestriction

    @Test("a key for one environment is refused in the other; a key for some topics refuses others, and topics derived from its bundles pass")
    func refusals() {
        let production = Restriction(environment: .production)
        #expect(production.refusal(environment: .production, topic: "com.bank.app") == nil)
        #expect(production.refusal(environment: .sandbox, topic: "com.bank.app") == "BadEnvironmentKeyIdInToken")
        let topics = Restriction(topics: ["com.bank.app"])
        #expect(topics.refusal(environment: .sandbox, topic: "com.bank.app") == nil)
        #expect(topics.refusal(environment: .production, topic: "com.bank.app.push-type.liveactivity") == nil)
        #expect(topics.refusal(environment: .production, topic: "com.bank.app.voip") == nil)
        #expect(topics.refusal(environment: .production, topic: "com.bank.other") == "UnrelatedKeyIdInToken")
        #expect(topics.refusal(environment: .production, topic: "com.bank.appx") == "UnrelatedKeyIdInToken")
        #expect(Restriction().refusal(environment: .sandbox, topic: "anything") == nil)
    }

    @Test("PUT /simulator/apns/keys bodies: an environment, topics, null or {} to lift; anything else is refused")
    func parsing() {
        let parsed = Restriction.parse(Data(#"{"K1": {"environment": "sandbox"}, "K2": {"topics": ["com.a"]}, "K3": null, "K4": {}}"#.utf8))
        #expect(parsed?["K1"] == .some(Restriction(environment: .sandbox)))
        #expect(parsed?["K2"] == .some(Restriction(topics: ["com.a"])))
        #expect(parsed?["K3"] == .some(nil) && parsed?["K4"] == .some(nil))
        #expect(Restriction.parse(Data(#"{"K1": {"environment": "staging"}}"#.utf8)) == nil)
        #expect(Restriction.parse(Data(#"{"K1": {"topics": "com.a"}}"#.utf8)) == nil)
        #expect(Restriction.parse(Data(#"["K1"]"#.utf8)) == nil)
    }
}
