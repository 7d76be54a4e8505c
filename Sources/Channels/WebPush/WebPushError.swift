/// Why a Web Push message could not be built, encrypted or decrypted.
public struct WebPushError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, in words an operator can act on.
    public let message: String

    /// Creates an error.
    public init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { message }
}
