import BankContract
import Foundation
import PigeonDomain
import PigeonCrypto
import SOAPCodec

/// Builds a signed `.pkpass` from what a bank sends instead of one (`passJson` and its files):
/// `manifest.json` lists each file's SHA-1, `signature` is its detached PKCS#7 signature made
/// with the pass type's certificate (and the WWDR intermediate), all stored in one ZIP. The pass
/// must name the pass type, serial number and token of the request, so a mix-up cannot put one
/// customer's card under another's serial.
package enum PassPackager {
    /// Names the gateway writes itself.
    package static let reservedNames: Set<String> = ["pass.json", "manifest.json", "signature"]

    package static func package(passJson: String, files: [(name: String, content: Data)], for pass: PassIdentity, token: String,
                        signer: PassSigner) throws -> Data {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(passJson.utf8))) as? [String: Any] else {
            throw SOAPFault.client("element 'passJson' is not a JSON object")
        }
        for (key, expected) in [("passTypeIdentifier", pass.passTypeIdentifier), ("serialNumber", pass.serialNumber), ("authenticationToken", token)] {
            guard object[key] as? String == expected else {
                throw SOAPFault.client("element 'passJson' must have \(key) equal to the request's \(key)")
            }
        }
        var seen = Set<String>()
        var total = passJson.utf8.count
        for file in files {
            if let problem = nameProblem(file.name) { throw SOAPFault.client("element 'files/name' '\(file.name.prefix(80))': \(problem)") }
            guard seen.insert(file.name).inserted else { throw SOAPFault.client("element 'files/name' '\(file.name.prefix(80))' appears twice") }
            total += file.content.count
        }
        guard total <= InboundService.Limits.passBytes else {
            throw SOAPFault.client("the pass's files add up to more than \(InboundService.Limits.passBytes) bytes")
        }
        let entries = [("pass.json", Data(passJson.utf8))] + files.map { ($0.name, $0.content) }
        var manifest: [String: String] = [:]
        for (name, content) in entries { manifest[name] = try PassSigner.sha1Hex(content) }
        let manifestData = try JSONSerialization.data(withJSONObject: manifest, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
        let signature = try signer.sign(manifestData)
        var zip = ZIPWriter()
        for (name, content) in entries { zip.add(name, content) }
        zip.add("manifest.json", manifestData)
        zip.add("signature", signature)
        return zip.finish()
    }

    /// Why `name` cannot be a file of a pass, or nil: a relative path of letters, digits and
    /// `. _ - @ /` (`en.lproj/logo@2x.png`), not one the gateway writes.
    package static func nameProblem(_ name: String) -> String? {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-@/")
        guard !name.isEmpty, name.count <= InboundService.Limits.passFileName, name.allSatisfy(allowed.contains) else {
            return "a file name is a relative path of letters, digits and . _ - @ /"
        }
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard !name.hasPrefix("/"), !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            return "a file name may not leave the pass"
        }
        guard !reservedNames.contains(name) else { return "\(name) is written by the gateway" }
        return nil
    }
}
