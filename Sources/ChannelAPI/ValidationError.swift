/// A refusal of bad input (a device, a notification, a registration) that names the offending field.
///
/// The CLI prints ``description`` and exits 65; nothing is stored.
public struct ValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The field path, e.g. `subscription.keys.p256dh`.
    public let field: String
    /// What is wrong with it.
    public let message: String

    /// Creates an error for `field`.
    public init(field: String, _ message: String) {
        self.field = field
        self.message = message
    }

    /// "field: message".
    public var description: String { "\(field): \(message)" }
}
