import Synchronization

/// Parts of a gateway the console shows that are made after it (the push clients, the
/// listeners), set once they exist.
package final class LateList<Element: Sendable>: Sendable {
    private let list = Mutex<[Element]>([])

    package init() {}

    package var elements: [Element] { list.withLock { $0 } }

    package func set(_ elements: [Element]) {
        list.withLock { $0 = elements }
    }
}
