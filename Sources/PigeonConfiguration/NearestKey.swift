/// The known key nearest a mistyped one, for "did you mean …?": the smallest edit distance
/// (case ignored), if it is small for the key's length.
enum NearestKey {
    static func suggestion(for key: String, among known: some Sequence<String>) -> String? {
        let typed = Array(key.lowercased())
        var best: (key: String, distance: Int)?
        for candidate in known {
            let distance = editDistance(typed, Array(candidate.lowercased()))
            if distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        guard let best, best.distance <= max(2, typed.count / 4) else { return nil }
        return best.key
    }

    /// Levenshtein distance (insertions, deletions, substitutions; a transposition counts as two).
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count), current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
