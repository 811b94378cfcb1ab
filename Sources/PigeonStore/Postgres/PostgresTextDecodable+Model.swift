import PigeonDomain
import PostgresDriver

// The domain's stored enumerations, read from their text columns.
extension DeliveryState: PostgresTextDecodable {}
extension Platform: PostgresTextDecodable {}
extension PushEnvironment: PostgresTextDecodable {}
extension ActivityPushKind: PostgresTextDecodable {}
extension PassDeliveryState: PostgresTextDecodable {}
extension ActivityRecipientState: PostgresTextDecodable {}
