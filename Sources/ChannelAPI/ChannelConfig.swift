/// A channel's config mapping as its factory reads it. Every read marks the key as used; keys the
/// channel does not read are reported as unknown by ``finish()``.
///
/// The router strips the keys every channel shares (`type`, `platforms`, `enabled`, `timeout`,
/// `retry`, `badge`, `allow-hosts`) before the factory sees the rest.
public final class ChannelConfig: @unchecked Sendable {
    // Only used during synchronous config loading on one thread; `@unchecked` because it tracks
    // consumed keys in a mutable set while a factory runs.
    /// The channel's name (its key under `channels:`).
    public let name: String
    /// The channel's mapping node.
    public let node: ConfigNode
    /// Hosts the operator allowed for device-supplied URLs (`allow-hosts:`).
    public let allowHosts: [String]
    private var entries: [String: (keyNode: ConfigNode, value: ConfigNode)] = [:]
    private var order: [String] = []
    private var used: Set<String> = []
    /// Values read through ``string(_:)`` under keys that name secrets (``Redaction/isSecretName(_:)``).
    private var secretValues: [String] = []

    /// The secret values this channel's factory read (bot tokens, webhook and relay secrets, …), after
    /// environment expansion. The router scrubs them from every delivery result it stores or prints.
    public var secrets: [String] { secretValues }

    /// Wraps a channel's mapping; `ignoring` lists keys the router already handled.
    public init(name: String, node: ConfigNode, ignoring: Set<String> = [], allowHosts: [String] = [])
        throws(ConfigError)
    {
        self.name = name
        self.node = node
        self.allowHosts = allowHosts
        for e in try node.mapping("channel \(name)") where !ignoring.contains(e.key) {
            entries[e.key] = (e.keyNode, e.value)
            order.append(e.key)
        }
    }

    /// A dry run without credentials (`herald validate --offline`, `explain`, `graph`). The factory
    /// checks every key but must not read credential files, and skips format checks of values that
    /// name an unset variable (``isUnresolved(_:)``); when it cannot build the channel without them it
    /// returns a ``DryRunChannel``. The channel is never asked to deliver.
    public var offline: Bool { node.offline }

    /// Whether `key`'s value names an environment variable that is not set: only ``offline``, where
    /// the value is kept as its `${NAME}` reference and cannot be checked.
    public func isUnresolved(_ key: String) -> Bool { entries[key]?.value.hasUnresolvedVariables ?? false }

    /// The raw node under `key`, marking it used.
    public func node(_ key: String) -> ConfigNode? {
        guard let e = entries[key] else { return nil }
        used.insert(key)
        return e.value.isNull ? nil : e.value
    }

    /// An error positioned at `key`'s value (or at the channel when the key is absent).
    public func error(at key: String?, _ message: String) -> ConfigError {
        if let key, let e = entries[key] { return e.value.error(message) }
        return node.error(message)
    }

    /// An optional string.
    public func string(_ key: String) throws(ConfigError) -> String? {
        let value = try node(key)?.string(key)
        if let value, !value.isEmpty, Redaction.isSecretName(key) { secretValues.append(value) }
        return value
    }

    /// A required string.
    public func requiredString(_ key: String) throws(ConfigError) -> String {
        guard let v = try string(key), !v.isEmpty else {
            throw node.error("channel \(name): missing required key '\(key)'")
        }
        return v
    }

    /// An optional integer within `range`.
    public func int(_ key: String, in range: ClosedRange<Int>? = nil) throws(ConfigError) -> Int? {
        guard let n = node(key) else { return nil }
        let v = try n.int(key)
        if let range, !range.contains(v) {
            throw n.error("\(key) must be in \(range.lowerBound)...\(range.upperBound)")
        }
        return v
    }

    /// An optional boolean.
    public func bool(_ key: String) throws(ConfigError) -> Bool? { try node(key)?.bool(key) }

    /// An optional duration.
    public func duration(_ key: String) throws(ConfigError) -> Duration? { try node(key)?.duration(key) }

    /// An optional path (`~` and relative paths resolved).
    public func path(_ key: String) throws(ConfigError) -> String? { try node(key)?.path(key) }

    /// An optional list of strings.
    public func stringList(_ key: String) throws(ConfigError) -> [String]? { try node(key)?.stringList(key) }

    /// An optional string that must be one of `values`.
    public func choice(_ key: String, _ values: [String]) throws(ConfigError) -> String? {
        guard let n = node(key) else { return nil }
        let v = try n.string(key)
        guard values.contains(v) else {
            throw n.error("\(key) must be one of \(values.joined(separator: ", ")), got \"\(v)\"")
        }
        return v
    }

    /// An optional mapping of string to string (e.g. `endpoints:`).
    public func stringMap(_ key: String, allowedKeys: Set<String>? = nil) throws(ConfigError) -> [String: String]? {
        guard let n = node(key) else { return nil }
        if let allowedKeys { _ = try ConfigMapping(n, key, keys: allowedKeys.sorted()) }
        var out: [String: String] = [:]
        for e in try n.mapping(key) { out[e.key] = try e.value.string(e.key) }
        return out
    }

    /// Refuses every key the factory did not read.
    public func finish() throws(ConfigError) {
        for key in order where !used.contains(key) {
            if let e = entries[key] { throw e.keyNode.error("unknown key '\(key)' in channel \(name)") }
        }
    }
}
