import HeraldConsole

/// One accepted API token: its name, the SHA-256 of its text, what it may reach and do.
public struct APIToken: Sendable, Equatable {
    /// The scopes of http-api.md §2.
    public static let knownScopes: Set<String> = ["send", "devices", "events", "read", "metrics", "relay"]

    /// Shown in logs and metrics, never the token.
    public var name: String
    /// Lower-case hex SHA-256 of the token's UTF-8 bytes.
    public var sha256: String
    /// Namespace names, or prefixes ending in `*`.
    public var namespaces: [String]
    /// Granted scopes.
    public var scopes: Set<String>

    /// Creates a token entry.
    public init(name: String, sha256: String, namespaces: [String], scopes: Set<String>) {
        self.name = name
        self.sha256 = sha256
        self.namespaces = namespaces
        self.scopes = scopes
    }

    /// Whether the token reaches `namespace` (an exact name, or a pattern `prefix*`).
    public func covers(_ namespace: String) -> Bool {
        namespaces.contains { pattern in
            pattern.hasSuffix("*") ? namespace.hasPrefix(pattern.dropLast()) : pattern == namespace
        }
    }

    /// The exact namespaces when the token has no pattern; nil when a pattern makes the set open.
    public var exactNamespaces: [String]? {
        namespaces.contains { $0.hasSuffix("*") } ? nil : namespaces
    }
}

extension ConsoleSummary.Caller {
    /// The caller of an API token: its name, its scopes in order, its namespace patterns.
    public init(token: APIToken) {
        self.init(name: token.name, scopes: token.scopes.sorted(), namespaces: token.namespaces)
    }
}
