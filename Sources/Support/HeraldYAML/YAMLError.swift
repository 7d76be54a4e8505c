/// A failure to read or parse YAML, with the position it refers to when known.
public struct YAMLError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: String, Sendable {
        /// libyaml rejected the text (scanner, parser or reader error), or an alias is undefined.
        case syntax
        /// A mapping repeats a key.
        case duplicateKey
        /// Valid YAML that Herald refuses: merge keys, non-scalar keys, excessive nesting or alias expansion.
        case unsupported
        /// The file could not be read.
        case io
        /// The stream holds more than one document.
        case multipleDocuments
    }

    /// The kind of failure.
    public let code: Code
    /// A human-readable explanation; for libyaml errors it names the call and carries libyaml's text.
    public let message: String
    /// Where the problem is, 1-based; `nil` when there is no position (for example I/O errors).
    public let mark: YAMLMark?

    /// Creates an error.
    public init(code: Code, message: String, mark: YAMLMark? = nil) {
        self.code = code
        self.message = message
        self.mark = mark
    }

    /// `"line:column: message"`, or just the message when there is no position.
    public var description: String {
        guard let mark else { return message }
        return "\(mark): \(message)"
    }
}
