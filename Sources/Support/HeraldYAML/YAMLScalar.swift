/// A scalar as written: its text, how it was quoted, and its explicit tag if any. No type resolution is done.
public struct YAMLScalar: Sendable, Hashable {
    /// How a scalar was written in the source.
    public enum Style: Sendable, Hashable {
        /// Unquoted, e.g. `name: herald`.
        case plain
        /// `'single quoted'`.
        case singleQuoted
        /// `"double quoted"`, with escapes already decoded.
        case doubleQuoted
        /// A `|` block literal; line breaks kept.
        case literal
        /// A `>` folded block; line breaks folded to spaces.
        case folded
    }

    /// The scalar's text after unquoting, unescaping and block folding.
    public var value: String
    /// How the scalar was written.
    public var style: Style
    /// The explicit tag, fully resolved by libyaml (`!!str` becomes `"tag:yaml.org,2002:str"`), or `nil`.
    public var tag: String?

    /// Creates a scalar.
    public init(value: String, style: Style = .plain, tag: String? = nil) {
        self.value = value
        self.style = style
        self.tag = tag
    }

    /// The YAML 1.2 core-schema null test: an untagged plain scalar that is one of `""`, `"~"`, `"null"`,
    /// `"Null"`, `"NULL"`, or any scalar explicitly tagged `!!null`.
    public var isNull: Bool {
        if tag == "tag:yaml.org,2002:null" { return true }
        guard style == .plain, tag == nil else { return false }
        switch value {
        case "", "~", "null", "Null", "NULL": return true
        default: return false
        }
    }
}
