/// What a simulated service accepted, oldest first. Bounded: past ``limit`` the older half is
/// dropped, so a long benchmark cannot grow the simulator without end.
struct DeliveryLog<Entry: Sendable>: Sendable {
    static var limit: Int { 1_000_000 }

    private(set) var entries: [Entry] = []

    mutating func append(_ entry: Entry) {
        if entries.count >= Self.limit { entries.removeFirst(entries.count / 2) }
        entries.append(entry)
    }
}
