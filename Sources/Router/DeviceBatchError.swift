/// A device of a batch registration (``Router/register(_:)-(Array<Device>)``) was refused; none of the
/// batch was stored.
public struct DeviceBatchError: Error, Sendable, CustomStringConvertible {
    /// The zero-based position of the refused device in the batch.
    public let index: Int
    /// Why it was refused (usually a `ValidationError` naming the field).
    public let error: any Error

    /// Creates the error for the device at `index`.
    public init(index: Int, error: any Error) {
        self.index = index
        self.error = error
    }

    /// "device N: …", counting from 1.
    public var description: String { "device \(index + 1): \(error)" }
}
