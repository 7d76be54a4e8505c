import ChannelAPI

extension ConfigTree {
    /// The config tree of a parsed YAML node: scalars keep their text and YAML's null test, mappings
    /// and sequences their order, every node its position.
    public init(_ yaml: YAMLNode) {
        let kind: ConfigTree.Kind
        switch yaml.kind {
        case .scalar(let s): kind = .scalar(s.value, isNull: s.isNull)
        case .sequence(let items): kind = .sequence(items.map(ConfigTree.init))
        case .mapping(let pairs): kind = .mapping(pairs.map { (ConfigTree($0.key), ConfigTree($0.value)) })
        }
        self.init(kind: kind, mark: yaml.mark)
    }
}

extension ConfigNode {
    /// Wraps a parsed YAML node (converted to a ``ConfigTree``) for a channel factory or the loader.
    public init(
        yaml: YAMLNode, file: String, environment: [String: String], baseDirectory: String, offline: Bool = false
    ) {
        self.init(
            tree: ConfigTree(yaml), file: file, environment: environment, baseDirectory: baseDirectory,
            offline: offline)
    }
}
