/// Writes the WSDL 1.1 of a ``ServiceDescription``: an XML Schema with the wrapper elements and
/// every named type they reach, one message per wrapper, a port type, SOAP 1.1 and SOAP 1.2
/// document/literal bindings, and a service whose ports point at `address`.
package struct WSDLGenerator: Sendable {
    package let service: ServiceDescription

    package init(service: ServiceDescription) {
        self.service = service
    }

    package func wsdl(address: String) -> String {
        let name = service.name
        var out = """
            <?xml version="1.0" encoding="UTF-8"?>
            <wsdl:definitions name="\(name)Service" targetNamespace="\(service.targetNamespace)" \
            xmlns:tns="\(service.targetNamespace)" xmlns:xs="http://www.w3.org/2001/XMLSchema" \
            xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/" \
            xmlns:soap12="http://schemas.xmlsoap.org/wsdl/soap12/">
              <wsdl:types>
                <xs:schema targetNamespace="\(service.targetNamespace)" elementFormDefault="unqualified" version="1.0">

            """
        for operation in service.operations {
            out += "      <xs:element name=\"\(operation.request.name)\" type=\"tns:\(operation.request.name)\"/>\n"
            out += "      <xs:element name=\"\(operation.response.name)\" type=\"tns:\(operation.response.name)\"/>\n"
        }
        for fault in service.faults {
            out += "      <xs:element name=\"\(fault.name)\" type=\"tns:\(fault.name)\"/>\n"
        }
        var emitted: Set<String> = []
        for operation in service.operations {
            schemaTypes(.complex(operation.request), emitted: &emitted, into: &out)
            schemaTypes(.complex(operation.response), emitted: &emitted, into: &out)
        }
        for fault in service.faults {
            schemaTypes(.complex(fault), emitted: &emitted, into: &out)
        }
        out += "    </xs:schema>\n  </wsdl:types>\n"

        for operation in service.operations {
            for element in [operation.request.name, operation.response.name] {
                out += "  <wsdl:message name=\"\(element)\"><wsdl:part name=\"parameters\" element=\"tns:\(element)\"/></wsdl:message>\n"
            }
        }
        for fault in service.faults {
            out += "  <wsdl:message name=\"\(fault.name)\"><wsdl:part name=\"\(fault.name)\" element=\"tns:\(fault.name)\"/></wsdl:message>\n"
        }

        out += "  <wsdl:portType name=\"\(name)\">\n"
        for operation in service.operations {
            out += "    <wsdl:operation name=\"\(operation.name)\">\n"
            out += "      <wsdl:input name=\"\(operation.request.name)\" message=\"tns:\(operation.request.name)\"/>\n"
            out += "      <wsdl:output name=\"\(operation.response.name)\" message=\"tns:\(operation.response.name)\"/>\n"
            for fault in service.faults {
                out += "      <wsdl:fault name=\"\(fault.name)\" message=\"tns:\(fault.name)\"/>\n"
            }
            out += "    </wsdl:operation>\n"
        }
        out += "  </wsdl:portType>\n"

        for (prefix, binding) in [("soap", "\(name)ServiceSoapBinding"), ("soap12", "\(name)ServiceSoap12Binding")] {
            out += "  <wsdl:binding name=\"\(binding)\" type=\"tns:\(name)\">\n"
            out += "    <\(prefix):binding style=\"document\" transport=\"http://schemas.xmlsoap.org/soap/http\"/>\n"
            for operation in service.operations {
                out += "    <wsdl:operation name=\"\(operation.name)\">\n"
                out += "      <\(prefix):operation soapAction=\"\" style=\"document\"/>\n"
                out += "      <wsdl:input name=\"\(operation.request.name)\"><\(prefix):body use=\"literal\"/></wsdl:input>\n"
                out += "      <wsdl:output name=\"\(operation.response.name)\"><\(prefix):body use=\"literal\"/></wsdl:output>\n"
                for fault in service.faults {
                    out += "      <wsdl:fault name=\"\(fault.name)\"><\(prefix):fault name=\"\(fault.name)\" use=\"literal\"/></wsdl:fault>\n"
                }
                out += "    </wsdl:operation>\n"
            }
            out += "  </wsdl:binding>\n"
        }

        let location = XMLEscaping.escapeAttribute(address)
        out += "  <wsdl:service name=\"\(name)Service\">\n"
        out += "    <wsdl:port name=\"\(name)Port\" binding=\"tns:\(name)ServiceSoapBinding\"><soap:address location=\"\(location)\"/></wsdl:port>\n"
        out += "    <wsdl:port name=\"\(name)Soap12Port\" binding=\"tns:\(name)ServiceSoap12Binding\"><soap12:address location=\"\(location)\"/></wsdl:port>\n"
        out += "  </wsdl:service>\n</wsdl:definitions>\n"
        return out
    }

    /// Emits `type` and every named type it reaches, each once.
    private func schemaTypes(_ type: XSDType, emitted: inout Set<String>, into out: inout String) {
        switch type {
        case .enumeration(let enumeration):
            guard emitted.insert(enumeration.name).inserted else { return }
            out += "      <xs:simpleType name=\"\(enumeration.name)\"><xs:restriction base=\"xs:string\">"
            for value in enumeration.values {
                out += "<xs:enumeration value=\"\(value)\"/>"
            }
            out += "</xs:restriction></xs:simpleType>\n"
        case .complex(let complex):
            guard emitted.insert(complex.name).inserted else { return }
            out += "      <xs:complexType name=\"\(complex.name)\"><xs:sequence>\n"
            for field in complex.fields {
                let maxOccurs = field.maxOccurs.map(String.init) ?? "unbounded"
                out += "        <xs:element name=\"\(field.name)\" type=\"\(field.type.qualifiedName)\""
                if field.minOccurs != 1 { out += " minOccurs=\"\(field.minOccurs)\"" }
                if maxOccurs != "1" { out += " maxOccurs=\"\(maxOccurs)\"" }
                out += "/>\n"
            }
            out += "      </xs:sequence></xs:complexType>\n"
            for field in complex.fields {
                schemaTypes(field.type, emitted: &emitted, into: &out)
            }
        case .string, .int, .long, .boolean, .base64Binary:
            return
        }
    }
}
