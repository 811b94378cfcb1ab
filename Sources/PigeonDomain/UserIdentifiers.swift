/// How user ids from the bank and the apps are compared (`caseInsensitiveIds`).
package struct UserIdentifiers: Sendable, Equatable {
    package var caseInsensitive: Bool

    package init(caseInsensitive: Bool) {
        self.caseInsensitive = caseInsensitive
    }

    /// The form ids are compared in.
    package func comparable(_ id: String) -> String {
        caseInsensitive ? id.lowercased() : id
    }

    /// Recipients without repeats (compared as configured), first occurrence kept, order kept.
    package func unique(_ ids: [String]) -> [String] {
        var seen = Set<String>()
        seen.reserveCapacity(ids.count)
        // Most sends name each recipient once: then the list itself is the answer, not a copy
        // of it (a million recipients are 16 MiB of strings or more).
        guard let firstRepeat = ids.firstIndex(where: { !seen.insert(comparable($0)).inserted }) else { return ids }
        return Array(ids[..<firstRepeat]) + ids[(firstRepeat + 1)...].filter { seen.insert(comparable($0)).inserted }
    }
}
