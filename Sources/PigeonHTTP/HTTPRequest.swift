import Foundation

/// What the server knows of a request before its body: enough to choose how much body to read.
package struct HTTPRequestHead: Sendable {
    package var method: String
    /// The path without the query string.
    package var path: String
    /// The `Authorization` header, if sent: credentials decide whether a body is read at all.
    package var authorization: String?

    package init(method: String, path: String, authorization: String? = nil) {
        self.method = method
        self.path = path
        self.authorization = authorization
    }
}

/// A complete HTTP request as the server hands it to a handler: the body is already collected and
/// bounded by what the server's admission allowed for it.
package struct HTTPRequest: Sendable {
    package var method: String
    /// The path without the query string, e.g. `/pigeon/services/SBIInboundWebService`, as the
    /// client sent it: still percent-encoded. A handler splits it into segments and decodes each
    /// once, so an id may hold `/` (`%2F`) and `%` (`%25`).
    package var path: String
    /// Query arguments in arrival order, still percent-encoded (libmicrohttpd has turned `+` into
    /// a space, as forms mean it); a bare key (`?wsdl`) has a `nil` value.
    package var query: [(name: String, value: String?)]
    /// Header names are lower-cased.
    package var headers: [String: String]
    /// The body; a handler may take it for itself with ``takeBody()``.
    package var body: Data {
        get { bodyStorage.bytes }
        set { bodyStorage = RequestBody(newValue) }
    }
    private var bodyStorage: RequestBody
    /// True when the body exceeded the limit or was refused from the head; ``body`` is then empty.
    package var bodyTooLarge: Bool
    /// The peer's IP address as text, for logs.
    package var peer: String

    package init(
        method: String, path: String, query: [(name: String, value: String?)] = [],
        headers: [String: String] = [:], body: Data = Data(), bodyTooLarge: Bool = false,
        peer: String = ""
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.bodyStorage = RequestBody(body)
        self.bodyTooLarge = bodyTooLarge
        self.peer = peer
    }

    /// The body, taken: every copy of this request has an empty body afterwards, and the
    /// memory goes when the caller's copy does (see ``RequestBody``).
    package func takeBody() -> Data {
        bodyStorage.take()
    }

    /// The value of a header, looked up case-insensitively.
    package func header(_ name: String) -> String? {
        headers[name.lowercased()]
    }

    /// Whether the query has the argument `name` (case-insensitive), with or without a value.
    package func hasQueryArgument(_ name: String) -> Bool {
        query.contains { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// Splits a `k=v&k2` string into arguments; values are kept as given.
    static func parseQuery(_ raw: String) -> [(name: String, value: String?)] {
        guard !raw.isEmpty else { return [] }
        return raw.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            if let equals = pair.firstIndex(of: "=") {
                return (String(pair[..<equals]), String(pair[pair.index(after: equals)...]))
            }
            return (String(pair), nil)
        }
    }
}
