import PigeonHTTP
import Testing
import PigeonTestSupport

/// `bankAllowedClients`' networks: CIDR as operators write it, checked strictly.
@Suite("IP networks", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct IPNetworkTests {
    @Test("IPv4 and IPv6 networks and single addresses; an IPv4 client of a dual-stack listener matches the IPv4 network")
    func contains() throws {
        let bank = try IPNetwork("10.20.0.0/16")
        #expect(bank.contains("10.20.255.1") && !bank.contains("10.21.0.1") && !bank.contains("2001:db8::1"))
        let single = try IPNetwork("192.0.2.7"), six = try IPNetwork("2001:db8:1::/48")
        #expect(single.contains("192.0.2.7") && !single.contains("192.0.2.8"))
        #expect(six.contains("2001:db8:1:ffff::9") && !six.contains("2001:db8:2::1"))
        let mapped = try IPNetwork("::ffff:10.0.0.0/104"), eight = try IPNetwork("10.0.0.0/8")
        #expect(mapped == eight)
        #expect(eight.contains("::ffff:10.1.2.3"), "an IPv4 client of a dual-stack listener")
        let everything = try IPNetwork("0.0.0.0/0"), spaced = try IPNetwork(" 10.0.0.0/8 ")
        #expect(everything.contains("203.0.113.9"))
        #expect(spaced.description == "10.0.0.0/8")
    }

    @Test("refused: host bits past the prefix, a prefix out of range, not an address", arguments: [
        "10.0.0.1/8", "10.0.0.0/33", "2001:db8::/129", "10.0.0.0/-1", "10.0.0.0/", "bank.example", "", "10.0.0.0/8/8", "10.0.0.0/ 8",
    ])
    func refused(_ text: String) {
        #expect(throws: IPNetwork.ParseError.self) { try IPNetwork(text) }
    }
}
