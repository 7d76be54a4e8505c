/// One HTTP header field: a name and a value.
///
/// Names are kept as given; lookups through ``HTTPResponse/header(_:)`` are case-insensitive.
public struct HTTPHeader: Sendable, Hashable {
    /// The field name, for example `content-type`.
    public var name: String
    /// The field value, without surrounding whitespace.
    public var value: String

    /// Creates a header field.
    /// - Parameters:
    ///   - name: The field name.
    ///   - value: The field value.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}
