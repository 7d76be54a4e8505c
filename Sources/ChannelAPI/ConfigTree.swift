/// A position in a config file: 1-based line and column.
public struct ConfigMark: Sendable, Hashable, CustomStringConvertible {
    /// The line, starting at 1.
    public var line: Int
    /// The column, starting at 1.
    public var column: Int

    /// Creates a position.
    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// `LINE:COLUMN`.
    public var description: String { "\(line):\(column)" }
}

/// One node of a parsed config document with the position it starts at, independent of the file
/// format: the router parses YAML and hands channel factories this tree (through ``ConfigNode``).
public struct ConfigTree: Sendable {
    /// What the node is.
    public indirect enum Kind: Sendable {
        /// A scalar's text as written (unquoted, unescaped); `isNull` for a null scalar (`~`, `null`,
        /// an empty plain value).
        case scalar(String, isNull: Bool)
        /// A sequence, in source order.
        case sequence([ConfigTree])
        /// A mapping, in source order, with unique scalar keys.
        case mapping([(key: ConfigTree, value: ConfigTree)])
    }

    /// What the node is.
    public var kind: Kind
    /// Where the node starts.
    public var mark: ConfigMark

    /// Creates a node.
    public init(kind: Kind, mark: ConfigMark) {
        self.kind = kind
        self.mark = mark
    }

    /// The scalar's text, or nil when the node is a sequence or mapping.
    public var scalar: String? {
        if case .scalar(let text, _) = kind { return text }
        return nil
    }

    /// Whether the node is a null scalar.
    public var isNull: Bool {
        if case .scalar(_, let isNull) = kind { return isNull }
        return false
    }

    /// The elements, or nil when the node is not a sequence.
    public var sequence: [ConfigTree]? {
        if case .sequence(let nodes) = kind { return nodes }
        return nil
    }

    /// The entries, or nil when the node is not a mapping.
    public var mapping: [(key: ConfigTree, value: ConfigTree)]? {
        if case .mapping(let pairs) = kind { return pairs }
        return nil
    }

    /// `"scalar"`, `"sequence"` or `"mapping"`, for error messages.
    public var kindName: String {
        switch kind {
        case .scalar: return "scalar"
        case .sequence: return "sequence"
        case .mapping: return "mapping"
        }
    }
}
