import Foundation

/// A node of the config together with what is needed to read it: the file name for error
/// positions, the environment for `${VAR}` / `${VAR:-default}` expansion, and the base directory
/// for relative paths. Typed accessors report `FILE:LINE:COLUMN` errors.
public struct ConfigNode: Sendable {
    /// The underlying node.
    public let tree: ConfigTree
    /// The config file path used in errors.
    public let file: String
    /// Environment variables for expansion.
    public let environment: [String: String]
    /// Directory that relative paths resolve against (the config file's directory).
    public let baseDirectory: String
    /// A dry run without credentials (`herald validate --offline`, `explain`, `graph`): a string or
    /// path that names an unset variable keeps the reference text (`${NAME}`) instead of failing,
    /// and factories do not read credential files (see ``ChannelConfig/offline``). Numbers,
    /// booleans and durations still need their variables.
    public let offline: Bool

    /// Wraps a node.
    public init(
        tree: ConfigTree, file: String, environment: [String: String], baseDirectory: String, offline: Bool = false
    ) {
        self.tree = tree
        self.file = file
        self.environment = environment
        self.baseDirectory = baseDirectory
        self.offline = offline
    }

    /// The node's position.
    public var mark: ConfigMark { tree.mark }

    /// An error positioned at this node.
    public func error(_ message: String) -> ConfigError { ConfigError(file: file, mark: tree.mark, message) }

    func wrap(_ node: ConfigTree) -> ConfigNode {
        ConfigNode(tree: node, file: file, environment: environment, baseDirectory: baseDirectory, offline: offline)
    }

    /// Whether the node is a null scalar.
    public var isNull: Bool { tree.isNull }

    /// The mapping's entries in file order, keys expanded as plain strings.
    public func mapping(_ what: String = "value") throws(ConfigError) -> [(
        key: String, keyNode: ConfigNode, value: ConfigNode
    )] {
        guard let pairs = tree.mapping else { throw error("\(what) must be a mapping, not a \(tree.kindName)") }
        var out: [(key: String, keyNode: ConfigNode, value: ConfigNode)] = []
        for p in pairs {
            guard let k = p.key.scalar else { throw wrap(p.key).error("keys must be scalars") }
            out.append((k, wrap(p.key), wrap(p.value)))
        }
        return out
    }

    /// The sequence's elements.
    public func sequence(_ what: String = "value") throws(ConfigError) -> [ConfigNode] {
        guard let items = tree.sequence else { throw error("\(what) must be a list, not a \(tree.kindName)") }
        return items.map(wrap)
    }

    /// The scalar as text, with `${VAR}` and `${VAR:-default}` expanded. ``offline``, an unset
    /// variable keeps its reference text (see ``hasUnresolvedVariables``).
    public func string(_ what: String = "value") throws(ConfigError) -> String {
        guard let s = tree.scalar else { throw error("\(what) must be a scalar, not a \(tree.kindName)") }
        return try expand(s, keepingUnset: offline).text
    }

    /// Whether the scalar names a variable that is not set (and has no default): only possible
    /// ``offline``, where ``string(_:)`` keeps the reference. Channel factories skip format checks
    /// of such values: an unset secret is not known in a dry run.
    public var hasUnresolvedVariables: Bool {
        guard offline, let s = tree.scalar else { return false }
        return (try? expand(s, keepingUnset: true).unresolved) ?? false
    }

    /// The scalar as text for a typed value: every variable must be set, also ``offline``.
    func typedText(_ what: String) throws(ConfigError) -> String {
        guard let s = tree.scalar else { throw error("\(what) must be a scalar, not a \(tree.kindName)") }
        return try expand(s)
    }

    /// An integer scalar (a 64-bit signed integer; larger numbers are an error, never a trap).
    public func int(_ what: String = "value") throws(ConfigError) -> Int {
        let s = try typedText(what)
        guard let v = Int(s) else {
            let digits = s.hasPrefix("-") || s.hasPrefix("+") ? s.dropFirst() : Substring(s)
            if !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) {
                throw error("\(what) is out of range: \(s) does not fit a 64-bit integer")
            }
            throw error("\(what) must be an integer, got \"\(s)\"")
        }
        return v
    }

    /// A number scalar.
    public func double(_ what: String = "value") throws(ConfigError) -> Double {
        let s = try typedText(what)
        guard let v = Double(s), v.isFinite else { throw error("\(what) must be a number, got \"\(s)\"") }
        return v
    }

    /// A boolean scalar (`true`/`false`, also `yes`/`no`, `on`/`off`).
    public func bool(_ what: String = "value") throws(ConfigError) -> Bool {
        let s = try typedText(what)
        switch s.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default: throw error("\(what) must be true or false, got \"\(s)\"")
        }
    }

    /// A duration: `500ms`, `10s`, `5m`, `1h`, `2d`, or a bare number of seconds; at most
    /// ``maximumDuration``. Negative, infinite, NaN and too-large values are errors at this node.
    public func duration(_ what: String = "value") throws(ConfigError) -> Duration {
        let s = try typedText(what)
        switch ConfigNode.readDuration(s) {
        case .value(let d): return d
        case .outOfRange:
            throw error("\(what) is out of range: \(s) is longer than the maximum of 36500d (100 years)")
        case .invalid:
            throw error("\(what) must be a duration like 500ms, 10s, 5m, 1h, got \"\(s)\"")
        }
    }

    /// The longest duration a config may give (100 years, `36500d`): every duration stays far from
    /// the limits of `Int64` milliseconds and of `Date`, so later arithmetic cannot overflow.
    public static let maximumDuration: Duration = .seconds(36_500 * 86_400)

    /// A file path: `~` expands to `$HOME`; relative paths resolve against ``baseDirectory``.
    public func path(_ what: String = "value") throws(ConfigError) -> String {
        let s = try string(what)
        guard !s.isEmpty else { throw error("\(what) must not be empty") }
        return ConfigNode.resolvePath(s, home: environment["HOME"] ?? NSHomeDirectory(), base: baseDirectory)
    }

    /// A list of strings; a single scalar is accepted as a one-element list.
    public func stringList(_ what: String = "value") throws(ConfigError) -> [String] {
        if tree.scalar != nil { return [try string(what)] }
        return try sequence(what).map { n throws(ConfigError) in try n.string(what) }
    }

    /// Expands `${VAR}` and `${VAR:-default}`. `$$` is a literal `$`.
    public func expand(_ text: String) throws(ConfigError) -> String {
        try expand(text, keepingUnset: false).text
    }

    /// Expands `text`; with `keepingUnset`, an unset variable without default keeps its reference
    /// text and `unresolved` is true instead of an error.
    func expand(_ text: String, keepingUnset: Bool) throws(ConfigError) -> (text: String, unresolved: Bool) {
        guard text.contains("$") else { return (text, false) }
        var unresolved = false
        var out = ""
        var i = text.startIndex
        while i < text.endIndex {
            let c = text[i]
            if c == "$" {
                let next = text.index(after: i)
                if next < text.endIndex, text[next] == "$" {
                    out.append("$")
                    i = text.index(after: next)
                    continue
                }
                if next < text.endIndex, text[next] == "{" {
                    guard let close = text[next...].firstIndex(of: "}") else {
                        throw error("unterminated ${ in \"\(text)\"")
                    }
                    let inner = String(text[text.index(after: next)..<close])
                    let name: String
                    let fallback: String?
                    if let r = inner.range(of: ":-") {
                        name = String(inner[..<r.lowerBound])
                        fallback = String(inner[r.upperBound...])
                    } else {
                        name = inner
                        fallback = nil
                    }
                    guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
                        throw error("invalid variable reference ${\(inner)}")
                    }
                    if let v = environment[name], !v.isEmpty {
                        out += v
                    } else if let fallback {
                        out += fallback
                    } else if keepingUnset {
                        out += "${\(name)}"
                        unresolved = true
                    } else {
                        throw error("environment variable \(name) is not set (use ${\(name):-default} for a default)")
                    }
                    i = text.index(after: close)
                    continue
                }
            }
            out.append(c)
            i = text.index(after: i)
        }
        return (out, unresolved)
    }

    /// Parses `500ms`, `10s`, `5m`, `1h`, `2d` or a bare number of seconds; nil for anything else,
    /// including negative, non-finite and longer-than-``maximumDuration`` values.
    public static func parseDuration(_ s: String) -> Duration? {
        if case .value(let d) = readDuration(s) { return d }
        return nil
    }

    enum DurationReading: Equatable {
        case value(Duration)
        case invalid
        case outOfRange
    }

    static func readDuration(_ s: String) -> DurationReading {
        let t = s.trimmingCharacters(in: .whitespaces)
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        var number = Substring(t)
        var factor = 1.0
        for (suffix, f) in units where t.hasSuffix(suffix) {
            number = t.dropLast(suffix.count)
            factor = f
            break
        }
        // Digits, one optional '.', an optional exponent: no sign, no hex, no "nan"/"inf" words.
        guard !number.isEmpty, number.first.map({ $0.isASCII && ($0.isNumber || $0 == ".") }) == true,
            number.allSatisfy({
                $0.isASCII && ($0.isNumber || $0 == "." || $0 == "e" || $0 == "E" || $0 == "+" || $0 == "-")
            }),
            let v = Double(number), v >= 0
        else { return .invalid }
        let ms = v * factor * 1000
        // Compared in Double before any conversion: an infinite or huge product never reaches Int64.
        guard ms.isFinite, ms <= Double(maximumDuration.milliseconds) else { return .outOfRange }
        return .value(.milliseconds(Int64(ms.rounded())))
    }

    /// Resolves `~` and relative paths.
    public static func resolvePath(_ s: String, home: String, base: String) -> String {
        if s == "~" { return home }
        if s.hasPrefix("~/") { return home + s.dropFirst(1) }
        if s.hasPrefix("/") || s == "-" { return s }
        let joined = base.hasSuffix("/") ? base + s : base + "/" + s
        return URL(fileURLWithPath: joined).standardizedFileURL.path
    }
}
