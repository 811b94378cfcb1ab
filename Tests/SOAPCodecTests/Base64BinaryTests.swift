import BankContract
import Foundation
@testable import SOAPCodec
import Testing
import PigeonTestSupport

/// `xs:base64Binary` (updatePass's `pass`): MIME-style line breaks accepted, anything outside the
/// alphabet refused rather than skipped, the size bound checked, and the bytes written back.
@Suite("base64Binary", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct Base64BinaryTests {
    let codec = SOAPCodec(service: InboundService.description)

    func updatePass(_ pass: String) -> Data {
        Data("""
            <s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><updatePass>\
            <passTypeIdentifier>pass.a</passTypeIdentifier><serialNumber>1</serialNumber>\
            <authenticationToken>0123456789abcdef</authenticationToken><pass>\(pass)</pass></updatePass></s:Body></s:Envelope>
            """.utf8)
    }

    @Test("bytes with line breaks decode; the answer writes bytes as base64")
    func roundTrip() throws {
        let bytes = Data((0..<200).map { UInt8($0) })
        let text = bytes.base64EncodedString(options: [.lineLength64Characters, .endLineWithCarriageReturn, .endLineWithLineFeed])
        #expect(text.contains("\r\n"))
        let request = try codec.decodeRequest(updatePass(text), contentType: "text/xml")
        #expect(request.parameters.bytes("pass") == bytes)
    }

    @Test("characters outside the alphabet, bad padding and too many bytes are faults naming the field")
    func refused() throws {
        for bad in ["QUJD!", "QUJ", "QU=JD", "%%%%"] {
            #expect(throws: (any Error).self) { try codec.decodeRequest(updatePass(bad), contentType: "text/xml") }
            do {
                _ = try codec.decodeRequest(updatePass(bad), contentType: "text/xml")
            } catch {
                #expect(error.fault.reason.contains("'updatePass/pass'") || error.fault.reason.contains("pass"), "\(error.fault.reason)")
            }
        }
        let limited = SOAPCodec(service: ServiceDescription(name: "S", targetNamespace: InboundService.namespace, operations: [
            OperationDescription(name: "put", requestFields: [Field("blob", .base64Binary(maxBytes: 4))], returnType: ComplexType(name: "r", fields: [])),
        ]))
        let envelope = { (blob: String) in
            Data("<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><put><blob>\(blob)</blob></put></s:Body></s:Envelope>".utf8)
        }
        #expect(try limited.decodeRequest(envelope(Data([1, 2, 3, 4]).base64EncodedString()), contentType: "text/xml").parameters.bytes("blob") == Data([1, 2, 3, 4]))
        do {
            _ = try limited.decodeRequest(envelope(Data([1, 2, 3, 4, 5]).base64EncodedString()), contentType: "text/xml")
            Issue.record("five bytes are more than four")
        } catch {
            #expect(error.fault.reason.contains("larger than 4 bytes"), "\(error.fault.reason)")
        }
    }

    @Test("the WSDL describes the pass operations with xs:base64Binary")
    func wsdl() {
        let wsdl = WSDLGenerator(service: InboundService.description).wsdl(address: "http://localhost/x")
        #expect(wsdl.contains(#"<xs:element name="pass" type="xs:base64Binary" minOccurs="0"/>"#), "\(wsdl)")
        #expect(wsdl.contains(#"name="updatePass""#) && wsdl.contains(#"name="getPassStatus""#))
        #expect(wsdl.contains(#"<xs:enumeration value="FETCHED"/>"#))
    }
}
