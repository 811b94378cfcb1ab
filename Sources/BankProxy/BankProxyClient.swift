import BankContract
import Foundation
import OutboundHTTP
import PigeonDomain
import SOAPCodec

/// The bank proxy's SOAP service (CONTRACT §3) as async calls. Requests are encoded and answers
/// decoded from ``OutboundService/description``, the same description the WSDL and the bank stub
/// use. Every failure is a ``BankProxyError``.
package struct BankProxyClient: Sendable {
    private let url: String
    private let http: HTTP2Client
    private let codec = SOAPCodec(service: OutboundService.description)
    /// The `Authorization` header proving the gateway to the bank, if Basic credentials are set.
    private let authorization: String?

    /// Calls go to `url` (`sbiOutboundWebServiceURL`) over `http`, with HTTP Basic `credentials`
    /// (`sbiOutboundUsername`/`sbiOutboundPassword`) when given.
    package init(url: String, http: HTTP2Client, credentials: (username: String, password: String)? = nil) {
        self.url = url
        self.http = http
        authorization = credentials.map { "Basic " + Data("\($0.username):\($0.password)".utf8).base64EncodedString() }
    }

    /// Whether the bank already authorized this subscription.
    package func checkSubscriptionAuthorized(_ request: SubscriptionRequest) async throws(BankProxyError) -> Bool {
        let result = try await call(OutboundService.checkSubscriptionAuthorized, Self.record(request))
        guard let authorized = result.boolean("authorized") else {
            throw BankProxyError(.invalidAnswer, "checkSubscriptionAuthorized answered without 'authorized'")
        }
        return authorized
    }

    /// Asks the bank to start its authorization (an SMS code); true when it did (`OK`). Sent at
    /// most once: after a connection failure the bank may have sent the SMS already.
    package func authorizeSubscription(_ request: SubscriptionRequest) async throws(BankProxyError) -> Bool {
        let result = try await call(OutboundService.authorizeSubscription, Self.record(request), idempotent: false)
        guard let answer = result.string("result") else {
            throw BankProxyError(.invalidAnswer, "authorizeSubscription answered without 'result'")
        }
        return answer == "OK"
    }

    /// Whether `code` is the one the bank sent; false for `VERIFICATION_FAILED`. Sent at most
    /// once: the bank may count or consume the code.
    package func verifySubscriptionAuthorization(bankClientId: String, userId: String, deviceId: String, code: String) async throws(BankProxyError) -> Bool {
        let result = try await call(OutboundService.verifySubscriptionAuthorization, SOAPRecord([
            "bankClientId": [.string(bankClientId)], "userId": [.string(userId)],
            "deviceId": [.string(deviceId)], "verificationCode": [.string(code)],
        ]), idempotent: false)
        guard let answer = result.string("result") else {
            throw BankProxyError(.invalidAnswer, "verifySubscriptionAuthorization answered without 'result'")
        }
        return answer == "OK"
    }

    /// Tells the bank that `users` did not receive `notificationId` in time.
    package func reportNotificationExpired(notificationId: String, users: [String]) async throws(BankProxyError) {
        _ = try await call(OutboundService.reportNotificationExpired, SOAPRecord([
            "notificationId": [.string(notificationId)], "userId": users.map { .string($0) },
        ]))
    }

    /// Tells the bank that `user` opened `notificationId`.
    package func pushIsOpened(notificationId: String, user: String) async throws(BankProxyError) {
        _ = try await call(OutboundService.pushIsOpened, SOAPRecord([
            "notificationId": [.string(notificationId)], "userId": [.string(user)],
        ]))
    }

    /// Tells the bank that `deviceCount` devices did not fetch the current version of `pass`
    /// after every update push (CONTRACT §7).
    package func reportPassUpdateNotFetched(passTypeIdentifier: String, serialNumber: String, deviceCount: Int) async throws(BankProxyError) {
        _ = try await call(OutboundService.reportPassUpdateNotFetched, SOAPRecord([
            "passTypeIdentifier": [.string(passTypeIdentifier)], "serialNumber": [.string(serialNumber)],
            "deviceCount": [.int(Int32(clamping: deviceCount))],
        ]))
    }

    private static func record(_ request: SubscriptionRequest) -> SOAPRecord {
        SOAPRecord([
            "bankClientId": [.string(request.bankClientId)], "userId": [.string(request.userId)],
            "deviceId": [.string(request.deviceId)], "platform": [.string(request.platform)],
        ])
    }

    private func call(_ operation: OperationDescription, _ parameters: SOAPRecord, idempotent: Bool = true) async throws(BankProxyError) -> SOAPRecord {
        let response: HTTP2Client.Response
        var headers = ["content-type": "text/xml; charset=utf-8", "soapaction": "\"\""]
        if let authorization { headers["authorization"] = authorization }
        do {
            response = try await http.send(
                url: url, headers: headers,
                body: codec.encodeRequest(operation, parameters: parameters), idempotent: idempotent)
        } catch {
            throw BankProxyError(.unavailable, "\(operation.name): \(error)")
        }
        do {
            return try codec.decodeResponse(response.body, for: operation)
        } catch {
            if error.detail == OutboundService.bankClientNotExists.name {
                throw BankProxyError(.bankClientNotExists, error.reason)
            }
            if response.status == 200 {
                throw BankProxyError(.invalidAnswer, "\(operation.name): \(error.reason)")
            }
            // A fault or an error page with a failure status: the bank is not serving.
            throw BankProxyError(.unavailable, "\(operation.name): HTTP \(response.status): \(error.reason.prefix(200))")
        }
    }
}
