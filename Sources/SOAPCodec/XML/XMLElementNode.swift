/// An element of a parsed document: its local name, namespace, text and child elements.
/// Attributes are kept only when they matter to SOAP (`xsi:nil`).
package struct XMLElementNode: Sendable, Equatable {
    package var name: String
    package var namespace: String?
    package var text: String
    package var children: [XMLElementNode]
    /// True when the element carried `xsi:nil="true"`.
    package var isNil: Bool

    package init(
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
    package func children(named name: String) -> [XMLElementNode] {
        children.filter { $0.name == name }
    }
}
