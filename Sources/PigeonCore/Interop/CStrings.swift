import Foundation

/// Lends a list of Swift strings to C as an array of `const char *`, valid only inside `body`.
/// The wrappers of C libraries use it for header names and values (a push's request lends its
/// header lines this way, a push at a time). Each string is lent by `withCString`, which for a
/// native Swift string (contiguous, NUL-terminated UTF-8) copies nothing; C reads each up to its
/// first NUL, as it would a copy.
package enum CStrings {
    package static func with<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
        var pointers: [UnsafePointer<CChar>?] = []
        pointers.reserveCapacity(strings.count)
        return lend(strings, from: 0, into: &pointers, body)
    }

    /// Lends `strings[index...]` one inside the other, then calls `body` with all of them.
    private static func lend<R>(_ strings: [String], from index: Int, into pointers: inout [UnsafePointer<CChar>?],
                                _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
        guard index < strings.count else { return pointers.withUnsafeBufferPointer { body($0.baseAddress) } }
        return strings[index].withCString { pointer in
            pointers.append(pointer)
            return lend(strings, from: index + 1, into: &pointers, body)
        }
    }
}
