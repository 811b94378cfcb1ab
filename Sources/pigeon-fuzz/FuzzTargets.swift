#if PIGEON_FUZZ
import BankContract
import Foundation
import PigeonConfiguration
import PigeonDomain
import PigeonDeviceAPI
import PigeonHTTP
import PigeonWallet
import SOAPCodec

/// The parsers of bytes from outside, each as a function that must return for any input: no
/// crash, no hang, no unbounded allocation (libFuzzer and AddressSanitizer watch for each).
enum FuzzTargets {
    static let all: [String: @Sendable (Data) -> Void] = [
        "soap": soap,
        "device-json": deviceJSON,
        "webpush-subscription": webPushSubscription,
        "pkpass": pkpass,
        "server-conf": serverConf,
        "passkit": passKit,
        "http-shim": HTTPShimTarget.exchange,
        "https-shim": HTTPShimTarget.tlsExchange,
        "console": MoreFuzzTargets.console,
        "activity": MoreFuzzTargets.activity,
        "bank-answer": MoreFuzzTargets.bankAnswer,
    ]

    private static let codec = SOAPCodec(service: InboundService.description)

    /// The XML gate and the inbound SOAP decoder: a request or a fault; what decodes encodes again.
    static func soap(_ data: Data) {
        _ = try? XMLSafetyCheck.validate(data)
        do {
            let request = try codec.decodeRequest(data, contentType: nil)
            if let record = request.parameters.record("notification") {
                _ = try? NotificationMessage(record: record)
            }
            _ = codec.encodeRequest(request.operation, parameters: request.parameters, version: request.version)
        } catch {
            _ = codec.encodeFault(error.fault, version: error.version)
        }
    }

    private static let apps = [
        PushRoute.defaultApp: WebPushHosts(patterns: ["fcm.googleapis.com", "*.push.apple.com", "127.0.0.1:8443"]),
        "business": WebPushHosts(patterns: []),
    ]

    /// The device API's JSON bodies: registration (every platform's token, Web Push
    /// subscriptions included) and verification.
    static func deviceJSON(_ data: Data) {
        _ = try? RegisterRequest(data, apps: apps)
        _ = try? VerifyRequest(data)
    }

    /// A Web Push subscription as a browser sends it, and as it is stored.
    static func webPushSubscription(_ data: Data) {
        if let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) {
            _ = try? WebPushSubscription(json: object)
            _ = try? RegisterRequest.webSubscription(object, hosts: apps[PushRoute.defaultApp]!)
        }
        _ = WebPushSubscription(stored: String(decoding: data, as: UTF8.self))
    }

    /// A `.pkpass` the bank sends in `updatePass`: its ZIP central directory and entry names.
    static func pkpass(_ data: Data) {
        _ = PassArchive.problem(data)
    }

    /// A PassKit web service call as a phone sends it (`METHOD /passkit/PATH?QUERY`, header lines,
    /// a blank line, the body): its path parts, `ApplePass` token, conditional headers and JSON
    /// bodies. What parses keeps the limits a phone cannot raise.
    static func passKit(_ data: Data) {
        let request = HTTPRequestText.parse(data)
        let parts = PassKitCall.parts(of: request.path, prefix: "/passkit")
        _ = PassKitCall.route(parts)
        guard request.path.hasPrefix("/passkit/"), let call = try? PassKitCall.parse(request, parts: parts) else { return }
        if case .log(let messages) = call {
            precondition(messages.count <= PassKitCall.maximumLogMessages, "more log messages than the limit")
        }
    }

    /// `server.conf` (an operator's file, and what `check-config` reads before a reload).
    static func serverConf(_ data: Data) {
        _ = try? GatewayConfiguration.parse(text: String(decoding: data, as: UTF8.self), name: "fuzz.conf")
    }
}
#endif
