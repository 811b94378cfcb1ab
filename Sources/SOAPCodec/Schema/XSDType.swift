/// The XML Schema types our services use. One description drives decoding, encoding and the
/// WSDL, so what the WSDL promises is exactly what is accepted and served.
package enum XSDType: Sendable {
    /// `xs:string`; longer values are refused when decoding (the bound is not published in WSDL,
    /// as JAX-WS does not publish one either).
    case string(maxLength: Int)
    /// `xs:int` (32-bit).
    case int
    /// `xs:long` (64-bit).
    case long
    /// `xs:boolean` (`true`, `false`, `1`, `0`).
    case boolean
    /// `xs:base64Binary`: bytes, refused when decoding beyond `maxBytes` (a signed Wallet pass).
    case base64Binary(maxBytes: Int)
    /// A named `xs:simpleType` restricting `xs:string` to the given values.
    case enumeration(EnumerationType)
    /// A named `xs:complexType` with a sequence of fields.
    case complex(ComplexType)

    /// The name the WSDL uses for this type (`xs:int`, `tns:pushContent`).
    var qualifiedName: String {
        switch self {
        case .string: "xs:string"
        case .int: "xs:int"
        case .long: "xs:long"
        case .boolean: "xs:boolean"
        case .base64Binary: "xs:base64Binary"
        case .enumeration(let type): "tns:\(type.name)"
        case .complex(let type): "tns:\(type.name)"
        }
    }
}

/// A named list of allowed string values.
package struct EnumerationType: Sendable {
    package var name: String
    package var values: [String]

    package init(name: String, values: [String]) {
        self.name = name
        self.values = values
    }
}

/// A named sequence of fields, emitted in this order.
package struct ComplexType: Sendable {
    package var name: String
    package var fields: [Field]

    package init(name: String, fields: [Field]) {
        self.name = name
        self.fields = fields
    }

    /// The field called `name`, if any.
    package func field(named name: String) -> Field? {
        fields.first { $0.name == name }
    }
}

/// One element of a sequence.
package struct Field: Sendable {
    package var name: String
    package var type: XSDType
    package var minOccurs: Int
    /// `nil` means unbounded.
    package var maxOccurs: Int?

    package init(_ name: String, _ type: XSDType, minOccurs: Int = 1, maxOccurs: Int? = 1) {
        self.name = name
        self.type = type
        self.minOccurs = minOccurs
        self.maxOccurs = maxOccurs
    }

    /// A field that may be absent.
    package static func optional(_ name: String, _ type: XSDType) -> Field {
        Field(name, type, minOccurs: 0, maxOccurs: 1)
    }

    /// A field that may repeat, at least `minOccurs` times, at most `maxOccurs` (nil: unbounded).
    package static func list(_ name: String, _ type: XSDType, minOccurs: Int = 0, maxOccurs: Int? = nil) -> Field {
        Field(name, type, minOccurs: minOccurs, maxOccurs: maxOccurs)
    }
}

/// One document/literal-wrapped operation: the request wrapper's fields and the response's
/// `return` type.
package struct OperationDescription: Sendable {
    package var name: String
    package var request: ComplexType
    package var response: ComplexType
    /// A repeated string field of the request, by its path below the wrapper (e.g.
    /// `["notification", "recipients"]`), read by the parser straight into a list of strings
    /// instead of into the document's tree: a send's millions of recipients.
    package var streamedList: [String]?

    /// `response` is the type of the response wrapper's single `return` element.
    package init(name: String, requestFields: [Field], returnType: ComplexType, streamedList: [String]? = nil) {
        self.name = name
        self.streamedList = streamedList
        self.request = ComplexType(name: name, fields: requestFields)
        self.response = ComplexType(
            name: "\(name)Response", fields: [.optional("return", .complex(returnType))])
    }
}

/// A whole SOAP service: what the WSDL describes and the codec serves.
package struct ServiceDescription: Sendable {
    package var name: String
    package var targetNamespace: String
    package var operations: [OperationDescription]
    /// Faults an operation may declare, by name of the fault element.
    package var faults: [ComplexType]

    package init(name: String, targetNamespace: String, operations: [OperationDescription], faults: [ComplexType] = []) {
        self.name = name
        self.targetNamespace = targetNamespace
        self.operations = operations
        self.faults = faults
    }

    /// The operation whose request wrapper is called `name`.
    package func operation(named name: String) -> OperationDescription? {
        operations.first { $0.name == name }
    }
}
