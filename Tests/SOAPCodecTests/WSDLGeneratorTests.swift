import BankContract
import Foundation
@testable import SOAPCodec
import Testing
import PigeonTestSupport

@Suite("WSDL", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct WSDLGeneratorTests {
    let wsdl = WSDLGenerator(service: InboundService.description).wsdl(address: "http://gw.example:8080/pigeon/services/SBIInboundWebService")

    @Test("every operation has messages, a port type entry and both bindings")
    func operations() {
        for operation in InboundService.description.operations {
            #expect(wsdl.contains("<wsdl:message name=\"\(operation.name)\">"))
            #expect(wsdl.contains("<wsdl:message name=\"\(operation.name)Response\">"))
            #expect(wsdl.components(separatedBy: "<wsdl:operation name=\"\(operation.name)\">").count == 4)
        }
        #expect(wsdl.contains("<soap:address location=\"http://gw.example:8080/pigeon/services/SBIInboundWebService\"/>"))
        #expect(wsdl.contains("<soap12:address"))
    }

    @Test("each named type is emitted once, in the schema's sequence order")
    func types() {
        #expect(wsdl.components(separatedBy: "<xs:complexType name=\"stringMap\">").count == 2)
        #expect(wsdl.components(separatedBy: "<xs:simpleType name=\"deliveryState\">").count == 2)
        let notification = wsdl.range(of: "<xs:complexType name=\"notification\">")!
        let rest = wsdl[notification.upperBound...]
        let order = ["details", "id", "perishable", "priority", "pushContent", "recipients", "timeout"].map { rest.range(of: "name=\"\($0)\"")!.lowerBound }
        #expect(order == order.sorted())
    }

    @Test("the WSDL is well-formed XML our own parser accepts")
    func wellFormed() throws {
        let root = try XMLTreeParser().parse(Data(wsdl.utf8))
        #expect(root.name == "definitions")
        #expect(root.children(named: "binding").count == 2)
    }
}
