/// What ``Router/register(_:)`` did with a device.
public struct RegistrationResult: Sendable, Equatable {
    /// True when the device was new.
    public var created: Bool
    /// Other registrations that held the same token/address and were removed (moved).
    public var moved: [String]
    /// The channels that will serve the device (see ``DeviceReach``); they validated it.
    public var channels: [String]
    /// Findings that did not stop the registration: today only ``RegistrationWarning/Code/unreachable``.
    public var warnings: [RegistrationWarning]

    /// Creates a result.
    /// - Parameters:
    ///   - created: Whether the device was new.
    ///   - moved: Registrations removed because they held the same address.
    ///   - channels: The channels that will serve the device.
    ///   - warnings: Non-fatal findings.
    public init(created: Bool, moved: [String], channels: [String], warnings: [RegistrationWarning] = []) {
        self.created = created
        self.moved = moved
        self.channels = channels
        self.warnings = warnings
    }
}

/// A non-fatal finding about a stored registration.
public struct RegistrationWarning: Sendable, Equatable, CustomStringConvertible {
    /// The kind of finding.
    public enum Code: String, Sendable {
        /// No enabled channel of the device's route serves its platform: it is stored, but nothing
        /// is delivered to it until the config changes.
        case unreachable
    }

    /// The kind.
    public var code: Code
    /// The device, as `namespace/deviceId (platform)`.
    public var device: String
    /// What is wrong, for people.
    public var message: String

    /// `warning: device NS/ID (platform) is unreachable: reason`.
    public var description: String { "warning: device \(device) is \(code.rawValue): \(message)" }
}
