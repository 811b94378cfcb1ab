import BankContract
import Foundation
import PigeonCore
import PigeonDomain
import PigeonCrypto
import PigeonWallet
import SOAPCodec

/// The bank's Wallet operations (CONTRACT §1, §7): `updatePass` stores a new version of a signed
/// pass and queues an update push to every device registered for it; `getPassStatus` tells where
/// each device stands. Bad values are SOAP faults naming the field, and nothing is stored.
extension InboundEndpoint {
    package func updatePass(_ parameters: SOAPRecord) async throws -> InboundResult {
        let pass = try Self.passIdentity(parameters)
        let token = parameters.string("authenticationToken") ?? ""
        if let problem = PassFields.authenticationTokenProblem(token) { throw SOAPFault.client("element 'authenticationToken': \(problem)") }
        let content = try passContent(parameters, pass: pass, token: token)
        switch try await passes.update(pass, authenticationDigest: SecretToken.digest(token), content: content) {
        case .stored(let version, let queued):
            logger.info("pass stored", metadata: ["pass": pass.description, "version": String(version), "devices": String(queued),
                                                  "bytes": String(content.count)])
            metrics.increment(Metric.passUpdatesTotal)
            return InboundResult(status: .ok).with("version", .long(version))
        case .tokenMismatch:
            throw SOAPFault.client("element 'authenticationToken' differs from the token pass \(pass) was first stored with; Wallet never changes a pass's token")
        }
    }

    /// The signed `.pkpass`: as sent, or built and signed here from `passJson` and `files`.
    private func passContent(_ parameters: SOAPRecord, pass: PassIdentity, token: String) throws -> Data {
        let files = parameters.records("files")
        switch (parameters.bytes("pass"), parameters.string("passJson")) {
        case (let content?, nil):
            guard files.isEmpty else { throw SOAPFault.client("element 'files' goes with 'passJson', not with a signed 'pass'") }
            guard !content.isEmpty else { throw SOAPFault.client("element 'pass' is empty") }
            if let problem = PassArchive.problem(content) { throw SOAPFault.client("element 'pass' is not a signed .pkpass: \(problem)") }
            return content
        case (nil, let passJson?):
            guard let signer = passSigners[pass.passTypeIdentifier] else {
                throw SOAPFault.client("the gateway has no certificate to sign passes of type \(pass.passTypeIdentifier) (passType.\(pass.passTypeIdentifier).certificatePath); send a signed 'pass' instead")
            }
            let named = files.map { (name: $0.string("name") ?? "", content: $0.bytes("content") ?? Data()) }
            return try PassPackager.package(passJson: passJson, files: named, for: pass, token: token, signer: signer)
        case (nil, nil):
            throw SOAPFault.client("missing required element 'pass' (a signed .pkpass) or 'passJson' (with its files, to be signed)")
        case (_?, _?):
            throw SOAPFault.client("send either 'pass' or 'passJson', not both")
        }
    }

    package func getPassStatus(_ parameters: SOAPRecord) async throws -> InboundResult {
        let pass = try Self.passIdentity(parameters)
        guard let status = try await passes.status(pass) else {
            return InboundResult(status: .entityNotFound, errorMessage: "no pass \(pass)")
        }
        return InboundResult(status: .ok)
            .with("version", .long(status.version))
            .with("devices", .entries(status.devices.map { MapEntry(key: $0.device, value: $0.state.rawValue) }))
    }

    private static func passIdentity(_ parameters: SOAPRecord) throws(SOAPFault) -> PassIdentity {
        let type = parameters.string("passTypeIdentifier") ?? "", serial = parameters.string("serialNumber") ?? ""
        if let problem = PassFields.identifierProblem(type, name: "element 'passTypeIdentifier'") { throw .client(problem) }
        if let problem = PassFields.identifierProblem(serial, name: "element 'serialNumber'") { throw .client(problem) }
        return PassIdentity(passTypeIdentifier: type, serialNumber: serial)
    }
}
