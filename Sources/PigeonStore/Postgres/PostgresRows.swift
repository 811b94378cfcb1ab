/// The rows of a result, copied out of libpq in text format.
public struct PostgresRows: Sendable {
    public var columns: [String]
    public var rows: [[String?]]
    /// Rows affected by an INSERT/UPDATE/DELETE.
    public var affected: Int

    public init(columns: [String] = [], rows: [[String?]] = [], affected: Int = 0) {
        self.columns = columns
        self.rows = rows
        self.affected = affected
    }

    public var isEmpty: Bool { rows.isEmpty }
    public var count: Int { rows.count }

    /// The single value of a one-row, one-column result.
    public var scalar: String? { rows.first?.first ?? nil }
}

extension Array where Element == String? {
    /// The column at `index` as text.
    public func text(_ index: Int) -> String? { self[index] }

    /// The column at `index` as an integer, `nil` if NULL or not a number.
    public func integer(_ index: Int) -> Int? { self[index].flatMap { Int($0) } }

    /// The column at `index` as a boolean (`t`/`f`).
    public func boolean(_ index: Int) -> Bool? { self[index].map { $0 == "t" } }
}
