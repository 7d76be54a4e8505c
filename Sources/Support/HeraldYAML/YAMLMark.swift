/// A position in YAML source text. Both fields are 1-based (libyaml's 0-based marks are converted).
public struct YAMLMark: Sendable, Hashable, CustomStringConvertible {
    /// 1-based line number.
    public var line: Int
    /// 1-based column, counted in characters as libyaml counts them.
    public var column: Int

    /// Creates a mark from 1-based line and column numbers.
    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// `"line:column"`, for example `"3:7"`.
    public var description: String { "\(line):\(column)" }
}
