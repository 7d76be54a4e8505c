/// A configuration error with the file and position it points at (`FILE:LINE:COLUMN: message`).
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// The config file path (or `<config>` for in-memory text).
    public var file: String
    /// Where in the file, when known.
    public var mark: ConfigMark?
    /// What is wrong.
    public var message: String

    /// Creates an error.
    public init(file: String, mark: ConfigMark?, _ message: String) {
        self.file = file
        self.mark = mark
        self.message = message
    }

    /// `FILE:LINE:COLUMN: message`.
    public var description: String { located(file, mark, message) }
}

/// `FILE:LINE:COLUMN: text`, or `FILE: text` without a position.
private func located(_ file: String, _ mark: ConfigMark?, _ text: String) -> String {
    if let mark { return "\(file):\(mark.line):\(mark.column): \(text)" }
    return "\(file): \(text)"
}

/// A non-fatal finding (for example a defined but unrouted channel), printed by `validate`.
public struct ConfigWarning: Sendable, CustomStringConvertible {
    /// The config file.
    public var file: String
    /// Where.
    public var mark: ConfigMark?
    /// What.
    public var message: String

    /// Creates a warning.
    public init(file: String, mark: ConfigMark?, _ message: String) {
        self.file = file
        self.mark = mark
        self.message = message
    }

    /// `FILE:LINE:COLUMN: warning: message`.
    public var description: String { located(file, mark, "warning: " + message) }
}
