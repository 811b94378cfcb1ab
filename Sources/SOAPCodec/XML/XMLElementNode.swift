/// An element of a parsed document: its local name, namespace, text and child elements.
/// Attributes are kept only when they matter to SOAP (`xsi:nil`).
public struct XMLElementNode: Sendable, Equatable {
    public var name: String
    public var namespace: String?
    public var text: String
    public var children: [XMLElementNode]
    /// True when the element carried `xsi:nil="true"`.
    public var isNil: Bool

    public init(
        name: String, namespace: String? = nil, text: String = "",
        children: [XMLElementNode] = [], isNil: Bool = false
    ) {
        self.name = name
        self.namespace = namespace
        self.text = text
        self.children = children
        self.isNil = isNil
    }

    /// Child elements with the given local name, in document order.
    public func children(named name: String) -> [XMLElementNode] {
        children.filter { $0.name == name }
    }
}
