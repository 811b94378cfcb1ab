import Foundation

/// Lends a list of Swift strings to C as an array of `const char *`, valid only inside `body`.
/// The wrappers of C libraries use it for header names and values.
package enum CStrings {
    package static func with<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { UnsafePointer($0) }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
    }
}
