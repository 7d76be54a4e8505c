/// One key/value entry of a YAML mapping, in source order.
public struct YAMLPair: Sendable {
    /// The key; always a scalar in trees produced by ``YAMLParser``.
    public var key: YAMLNode
    /// The value.
    public var value: YAMLNode

    /// Creates a pair.
    public init(key: YAMLNode, value: YAMLNode) {
        self.key = key
        self.value = value
    }
}

/// A node of a parsed YAML document together with the position it starts at.
public struct YAMLNode: Sendable {
    /// What the node is.
    public indirect enum Kind: Sendable {
        /// A scalar value.
        case scalar(YAMLScalar)
        /// A sequence, in source order.
        case sequence([YAMLNode])
        /// A mapping, in source order, with unique scalar keys.
        case mapping([YAMLPair])
    }

    /// What the node is.
    public var kind: Kind
    /// The start position of the node (for an alias, the position of the alias itself).
    public var mark: YAMLMark

    /// Creates a node.
    public init(kind: Kind, mark: YAMLMark) {
        self.kind = kind
        self.mark = mark
    }

    /// The scalar, or `nil` when the node is a sequence or mapping.
    public var scalar: YAMLScalar? {
        if case .scalar(let scalar) = kind { return scalar }
        return nil
    }

    /// The elements, or `nil` when the node is not a sequence.
    public var sequence: [YAMLNode]? {
        if case .sequence(let nodes) = kind { return nodes }
        return nil
    }

    /// The pairs, or `nil` when the node is not a mapping.
    public var mapping: [YAMLPair]? {
        if case .mapping(let pairs) = kind { return pairs }
        return nil
    }

    /// The scalar's text, or `nil` when the node is not a scalar.
    public var string: String? { scalar?.value }

    /// `true` when the node is a null scalar (see ``YAMLScalar/isNull``).
    public var isNull: Bool { scalar?.isNull ?? false }

    /// The value for the first pair whose key is a scalar with text `key`; `nil` if absent or not a mapping.
    public subscript(key: String) -> YAMLNode? {
        mapping?.first { $0.key.scalar?.value == key }?.value
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
