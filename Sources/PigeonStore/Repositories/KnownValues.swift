import PigeonDomain
import PostgresDriver

/// The stored enumerations' values this version knows, as text-array parameters. Statements that
/// read rows for pushing filter on them (`platform = ANY($n::text[])`): a row a newer version wrote
/// with a value this one cannot push is left for a process that knows it, and never fails a read of
/// the others.
enum KnownValues {
    static let platforms = PostgresArray.encode(Platform.allCases.map(\.rawValue))
    static let environments = PostgresArray.encode(PushEnvironment.allCases.map(\.rawValue))
    static let activityPushKinds = PostgresArray.encode(ActivityPushKind.allCases.map(\.rawValue))
}
