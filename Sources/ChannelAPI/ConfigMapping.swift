/// A config section whose keys are known: opening it refuses any other key at the key's position
/// (`unknown key 'k' in SECTION (expected a, b, c)`), and each value is read by key with
/// ``ConfigNode``'s typed accessors, its errors naming `SECTION.key` and pointing at the value.
///
/// The router reads its own sections (`store:`, `http:`, a route step, …) and the server its
/// `server:` section with it; a channel's keys are read through ``ChannelConfig``, which learns them
/// from what the factory reads.
public struct ConfigMapping: Sendable {
    /// The mapping node.
    public let node: ConfigNode
    /// The section's name in errors (`store`, `server.tls`, `a token`, `the config`).
    public let section: String
    /// The accepted keys, in the order the "expected" list names them.
    public let keys: [String]
    /// The keys present, in file order.
    public let written: [String]
    /// The prefix of the names value errors use (`store.` for `store.path`), or empty.
    let prefix: String
    let entries: [String: (keyNode: ConfigNode, value: ConfigNode)]

    /// Opens `node` as a mapping whose keys must be among `keys`.
    /// - Parameters:
    ///   - node: The mapping (any other node kind is an error: `SECTION must be a mapping`).
    ///   - section: The section's name in errors.
    ///   - keys: The accepted keys, as the "expected" list names them.
    ///   - qualified: Whether value errors name `SECTION.key` (`store.lease`) or the bare key
    ///     (`mode` in a route step).
    /// - Throws: ``ConfigError`` at the first key not in `keys`.
    public init(_ node: ConfigNode, _ section: String, keys: [String], qualified: Bool = true) throws(ConfigError) {
        self.node = node
        self.section = section
        self.keys = keys
        prefix = qualified ? section + "." : ""
        var entries: [String: (keyNode: ConfigNode, value: ConfigNode)] = [:]
        var written: [String] = []
        for e in try node.mapping(section) {
            guard keys.contains(e.key) else {
                throw e.keyNode.error(
                    "unknown key '\(e.key)' in \(section) (expected \(keys.joined(separator: ", ")))")
            }
            entries[e.key] = (e.keyNode, e.value)
            written.append(e.key)
        }
        self.entries = entries
        self.written = written
    }

    /// The value under `key` (a null value included), or nil when the key is absent.
    public subscript(_ key: String) -> ConfigNode? { entries[key]?.value }

    /// The node of `key` itself (for an error about the key), or nil when absent.
    public func keyNode(_ key: String) -> ConfigNode? { entries[key]?.keyNode }

    /// The name value errors use for `key`: `SECTION.key`, or `key` when not qualified.
    public func name(_ key: String) -> String { prefix + key }

    /// An error positioned at the section's node.
    public func error(_ message: String) -> ConfigError { node.error(message) }

    /// The section under `key`, opened with its own keys and named `SECTION.key`; nil when absent
    /// (or null, with `nullIsAbsent`: `store:` with nothing under it).
    public func section(_ key: String, nullIsAbsent: Bool = false, keys: [String]) throws(ConfigError)
        -> ConfigMapping?
    {
        guard let n = self[key], !(nullIsAbsent && n.isNull) else { return nil }
        return try ConfigMapping(n, name(key), keys: keys)
    }

    /// A string, when present.
    public func string(_ key: String) throws(ConfigError) -> String? { try self[key]?.string(name(key)) }

    /// A boolean, when present.
    public func bool(_ key: String) throws(ConfigError) -> Bool? { try self[key]?.bool(name(key)) }

    /// A duration, when present.
    public func duration(_ key: String) throws(ConfigError) -> Duration? { try self[key]?.duration(name(key)) }

    /// A path (`~` and relative paths resolved), when present.
    public func path(_ key: String) throws(ConfigError) -> String? { try self[key]?.path(name(key)) }

    /// A list of strings (a single scalar is a one-element list), when present.
    public func stringList(_ key: String) throws(ConfigError) -> [String]? { try self[key]?.stringList(name(key)) }

    /// An integer in `range`, when present; outside it, `NAME must be in A...B, got V` at the value.
    public func int(_ key: String, in range: ClosedRange<Int>) throws(ConfigError) -> Int? {
        guard let n = self[key] else { return nil }
        let v = try n.int(name(key))
        guard range.contains(v) else {
            throw n.error("\(name(key)) must be in \(range.lowerBound)...\(range.upperBound), got \(v)")
        }
        return v
    }
}
