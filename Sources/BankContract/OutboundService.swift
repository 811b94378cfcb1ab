import PigeonDomain
import SOAPCodec

/// The bank proxy's service (`SBIOutbound`, CONTRACT §3), described once: the gateway's client,
/// the reference `pigeon bank-stub` and the WSDL served at
/// `/pigeon/services/SBIOutbound?wsdl` all read this description.
package enum OutboundService {
    package static let namespace = "http://outbound.sbi.pigeon.idamobile.com/"

    /// Field limits applied when decoding.
    package enum Limits {
        package static let identifier = 256
        package static let verificationCode = 64
        /// Users in one `reportNotificationExpired`.
        package static let users = 10_000
    }

    // MARK: Types

    /// Every platform a device registers with (CONTRACT §2): the bank is asked about each.
    package static let platform = EnumerationType(name: "platform", values: Platform.allCases.map(\.rawValue))
    package static let authorizationResult = EnumerationType(name: "authorizationResult", values: ["OK", "ERROR"])
    package static let verificationResult = EnumerationType(name: "verificationResult", values: ["OK", "VERIFICATION_FAILED"])

    /// The fault a bank raises for an unknown `bankClientId`.
    package static let bankClientNotExists = ComplexType(
        name: "BankClientNotExistsException", fields: [.optional("message", .string(maxLength: 4096))])

    static let subscriptionFields: [Field] = [
        Field("bankClientId", .string(maxLength: Limits.identifier)),
        Field("userId", .string(maxLength: Limits.identifier)),
        Field("deviceId", .string(maxLength: Limits.identifier)),
        Field("platform", .enumeration(platform)),
    ]

    // MARK: Operations

    package static let checkSubscriptionAuthorized = OperationDescription(
        name: "checkSubscriptionAuthorized",
        requestFields: subscriptionFields,
        returnType: ComplexType(name: "checkSubscriptionAuthorizedResult", fields: [Field("authorized", .boolean)]))
    package static let authorizeSubscription = OperationDescription(
        name: "authorizeSubscription",
        requestFields: subscriptionFields,
        returnType: ComplexType(name: "authorizeSubscriptionResult", fields: [Field("result", .enumeration(authorizationResult))]))
    package static let verifySubscriptionAuthorization = OperationDescription(
        name: "verifySubscriptionAuthorization",
        requestFields: [
            Field("bankClientId", .string(maxLength: Limits.identifier)),
            Field("userId", .string(maxLength: Limits.identifier)),
            Field("deviceId", .string(maxLength: Limits.identifier)),
            Field("verificationCode", .string(maxLength: Limits.verificationCode)),
        ],
        returnType: ComplexType(name: "verifySubscriptionAuthorizationResult", fields: [Field("result", .enumeration(verificationResult))]))
    package static let reportNotificationExpired = OperationDescription(
        name: "reportNotificationExpired",
        requestFields: [
            Field("notificationId", .string(maxLength: Limits.identifier)),
            .list("userId", .string(maxLength: Limits.identifier), minOccurs: 1, maxOccurs: Limits.users),
        ],
        returnType: ComplexType(name: "reportNotificationExpiredResult", fields: []))
    package static let pushIsOpened = OperationDescription(
        name: "pushIsOpened",
        requestFields: [
            Field("notificationId", .string(maxLength: Limits.identifier)),
            Field("userId", .string(maxLength: Limits.identifier)),
        ],
        returnType: ComplexType(name: "pushIsOpenedResult", fields: []))

    package static let reportPassUpdateNotFetched = OperationDescription(
        name: "reportPassUpdateNotFetched",
        requestFields: [
            Field("passTypeIdentifier", .string(maxLength: Limits.identifier)),
            Field("serialNumber", .string(maxLength: Limits.identifier)),
            Field("deviceCount", .int),
        ],
        returnType: ComplexType(name: "reportPassUpdateNotFetchedResult", fields: []))

    /// The whole service.
    package static let description = ServiceDescription(
        name: "SBIOutbound",
        targetNamespace: namespace,
        operations: [checkSubscriptionAuthorized, authorizeSubscription, verifySubscriptionAuthorization, reportNotificationExpired, pushIsOpened,
                     reportPassUpdateNotFetched],
        faults: [bankClientNotExists])
}
