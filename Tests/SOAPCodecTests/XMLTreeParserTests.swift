import Foundation
import Testing
@testable import SOAPCodec
import PigeonTestSupport

@Suite("XML tree parser", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct XMLTreeParserTests {
    @Test("a document past libxml2's 10 MB single-push limit parses whole (a fan-out of hundreds of thousands)")
    func largeDocument() throws {
        let count = 300_000
        var text = "<list>"
        text.reserveCapacity(count * 40)
        for index in 0..<count { text += "<recipients>user-\(index)-padding-pad</recipients>" }
        text += "</list>"
        #expect(text.utf8.count > 10_000_000)
        let root = try XMLTreeParser().parse(Data(text.utf8))
        #expect(root.children.count == count)
        #expect(root.children.last?.text == "user-\(count - 1)-padding-pad")
    }

    @Test("limits still hold across chunks: too many elements are refused")
    func elementLimit() {
        let text = "<list>" + String(repeating: "<a>x</a>", count: 2_000) + "</list>"
        #expect(throws: XMLTreeParser.ParseError.self) {
            try XMLTreeParser(limits: .init(maxElements: 1_000)).parse(Data(text.utf8))
        }
    }
}
