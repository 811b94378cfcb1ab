import Foundation
import Testing
@testable import SOAPCodec
import PigeonTestSupport

@Suite("XML safety gate", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct XMLSafetyCheckTests {
    let parser = XMLTreeParser()

    @Test("an external entity pointing at /etc/passwd is refused before parsing")
    func externalEntity() {
        let xml = """
            <?xml version="1.0"?><!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
            <Envelope><Body>&xxe;</Body></Envelope>
            """
        #expect(throws: XMLSafetyCheck.Rejection.documentTypeDeclaration) { try XMLSafetyCheck.validate(Array(xml.utf8)) }
        #expect(throws: XMLTreeParser.ParseError.self) { try parser.parse(Data(xml.utf8)) }
    }

    @Test("tags over the byte or attribute bound are refused; quoted '>' and '=', comments and CDATA do not count")
    func tagBounds() throws {
        let many = (0..<(XMLSafetyCheck.maximumAttributes + 1)).map { "a\($0)=\"\"" }.joined(separator: " ")
        #expect(throws: XMLSafetyCheck.Rejection.oversizedTag) { try XMLSafetyCheck.validate(Array("<r><x \(many)/></r>".utf8)) }
        let long = "<r><x a=\"" + String(repeating: "v", count: XMLSafetyCheck.maximumTagBytes) + "\"/></r>"
        #expect(throws: XMLSafetyCheck.Rejection.oversizedTag) { try XMLSafetyCheck.validate(Array(long.utf8)) }
        let enough = (0..<XMLSafetyCheck.maximumAttributes).map { "a\($0)=\"x>y=z\"" }.joined(separator: " ")
        try XMLSafetyCheck.validate(Array("<r><x \(enough)/><!-- <a b=1 c=2> --><![CDATA[ <\(many)> ]]>\(String(repeating: "text ", count: 5000))</r>".utf8))
    }

    @Test("billion laughs is refused")
    func billionLaughs() {
        var xml = "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">"
        for level in 1...9 {
            xml += "<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level == 1 ? "" : String(level - 1));", count: 10) + "\">"
        }
        xml += "]><lolz>&lol9;</lolz>"
        #expect(throws: XMLSafetyCheck.Rejection.documentTypeDeclaration) { try XMLSafetyCheck.validate(Array(xml.utf8)) }
    }

    @Test("quadratic blow-up is refused")
    func quadraticBlowUp() {
        let entity = String(repeating: "A", count: 50_000)
        let xml = "<?xml version=\"1.0\"?><!DOCTYPE kaboom [<!ENTITY a \"\(entity)\">]><kaboom>"
            + String(repeating: "&a;", count: 20_000) + "</kaboom>"
        #expect(throws: XMLSafetyCheck.Rejection.documentTypeDeclaration) { try XMLSafetyCheck.validate(Array(xml.utf8)) }
    }

    @Test("a DOCTYPE hidden in UTF-16 without a byte-order mark is refused")
    func utf16WithoutBOM() {
        let xml = "<?xml version=\"1.0\" encoding=\"UTF-16\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><x>&e;</x>"
        let little = Array(xml.data(using: .utf16LittleEndian)!)
        let big = Array(xml.data(using: .utf16BigEndian)!)
        #expect(throws: XMLSafetyCheck.Rejection.nulByte) { try XMLSafetyCheck.validate(little) }
        #expect(throws: XMLSafetyCheck.Rejection.nulByte) { try XMLSafetyCheck.validate(big) }
    }

    @Test("a DOCTYPE hidden in UTF-7 is refused")
    func utf7() {
        // "<?xml version="1.0" encoding="UTF-7"?>+ADw-!DOCTYPE …" — the markup after the
        // declaration is UTF-7-encoded; the declaration itself names a foreign encoding.
        let xml = "<?xml version=\"1.0\" encoding=\"UTF-7\"?>+ADw-!DOCTYPE x +AFs-+ADw-!ENTITY e SYSTEM +ACI-file:///etc/passwd+ACI-+AD4-+AF0-+AD4-+ADw-x+AD4-+ACY-e+ADs-+ADw-/x+AD4-"
        #expect(throws: XMLSafetyCheck.Rejection.unsupportedEncoding("UTF-7")) { try XMLSafetyCheck.validate(Array(xml.utf8)) }
        let bare = "+ADw-!DOCTYPE x+AD4-"
        #expect(throws: XMLSafetyCheck.Rejection.notMarkup) { try XMLSafetyCheck.validate(Array(bare.utf8)) }
    }

    @Test("EBCDIC is refused")
    func ebcdic() {
        // "<?xml" in EBCDIC (code page 037): 4C 6F A7 94 93
        let bytes: [UInt8] = [0x4C, 0x6F, 0xA7, 0x94, 0x93, 0x40, 0xA5, 0x85, 0x99, 0xA2, 0x89, 0x96, 0x95]
        #expect(throws: XMLSafetyCheck.Rejection.notMarkup) { try XMLSafetyCheck.validate(bytes) }
    }

    @Test("UTF-32 and empty input never reach the parser")
    func utf32AndEmpty() {
        let utf32 = Array("<a/>".data(using: .utf32LittleEndian)!)
        #expect(throws: XMLSafetyCheck.Rejection.nulByte) { try XMLSafetyCheck.validate(utf32) }
        #expect(throws: XMLSafetyCheck.Rejection.empty) { try XMLSafetyCheck.validate([UInt8]()) }
        #expect(throws: XMLSafetyCheck.Rejection.empty) { try XMLSafetyCheck.validate(Array("  \n ".utf8)) }
    }

    @Test("ordinary documents pass: BOM, declaration, comments, CDATA")
    func ordinaryDocuments() throws {
        try XMLSafetyCheck.validate([0xEF, 0xBB, 0xBF] + Array("<?xml version='1.0' encoding='utf-8'?><a><!-- hi --><![CDATA[<x>]]></a>".utf8))
        try XMLSafetyCheck.validate(Array("\n  <a encoding=\"x\">text</a>".utf8))
        let root = try parser.parse(Data("<?xml version=\"1.0\" encoding=\"US-ASCII\"?><a><b>1</b><![CDATA[<c>]]></a>".utf8))
        #expect(root.name == "a")
        #expect(root.children.first?.text == "1")
        #expect(root.text == "<c>")
    }

    @Test("an unclosed CDATA-like declaration is refused")
    func fakeCDATA() {
        #expect(throws: XMLSafetyCheck.Rejection.documentTypeDeclaration) {
            try XMLSafetyCheck.validate(Array("<a><![INCLUDE[ x ]]></a>".utf8))
        }
    }

    @Test("depth and element count are bounded")
    func limits() {
        let deep = String(repeating: "<a>", count: 100) + String(repeating: "</a>", count: 100)
        #expect(throws: XMLTreeParser.ParseError.self) { try parser.parse(Data(deep.utf8)) }
        let wide = "<a>" + String(repeating: "<b/>", count: 50) + "</a>"
        let small = XMLTreeParser(limits: .init(maxDepth: 8, maxElements: 10))
        #expect(throws: XMLTreeParser.ParseError.self) { try small.parse(Data(wide.utf8)) }
    }

    @Test("malformed XML is a parse error with a position")
    func malformed() {
        #expect {
            try parser.parse(Data("<a><b></a>".utf8))
        } throws: { error in
            (error as? XMLTreeParser.ParseError)?.description.contains("line") ?? false
        }
    }
}
