import ChannelAPI

/// An APNs environment: where a device token was issued and where it must be sent.
public enum APNsEnvironment: String, Sendable, CaseIterable {
    /// `api.push.apple.com`: App Store, TestFlight and ad-hoc builds.
    case production
    /// `api.sandbox.push.apple.com`: development builds run from Xcode.
    case sandbox
}

/// What a full or generic APNs alert may reveal (`content:`).
public enum APNsContentMode: String, Sendable, CaseIterable {
    /// Title, subtitle, body and the notification's `data` keys.
    case full
    /// openchamber's mode: a fixed title per type and the session name, no message content.
    case generic
}

/// End-to-end encryption of the alert content (`encryption:`).
public enum APNsEncryption: String, Sendable, CaseIterable {
    /// Plain APNs payloads.
    case none
    /// hapi's AES-256-GCM envelope under each device's 32-byte `pushKey`.
    case hapiV1 = "hapi-v1"
}

/// The settings of one `type: apns` channel, as read from its YAML mapping.
public struct APNsConfiguration: Sendable, Equatable {
    /// The signing key's id (`key-id`), sent as the JWT `kid`.
    public var keyID: String
    /// The Apple developer team id (`team-id`), sent as the JWT `iss`.
    public var teamID: String
    /// The app's bundle id (`topic`); push-type suffixes are added to it.
    public var topic: String
    /// The environment of devices that did not report one (`environment`, default production).
    public var environment: APNsEnvironment
    /// When set, every device is sent to this environment (`force-environment`).
    public var forceEnvironment: APNsEnvironment?
    /// Payload encryption (`encryption`, default none).
    public var encryption: APNsEncryption
    /// Content mode (`content`, default full).
    public var content: APNsContentMode
    /// Base URLs per environment (`endpoints`), without a trailing slash.
    public var endpoints: [APNsEnvironment: String]

    /// Apple's hosts.
    public static let defaultEndpoints: [APNsEnvironment: String] = [
        .production: "https://api.push.apple.com", .sandbox: "https://api.sandbox.push.apple.com",
    ]

    /// Creates a configuration; endpoints not given fall back to Apple's hosts.
    public init(
        keyID: String, teamID: String, topic: String, environment: APNsEnvironment = .production,
        forceEnvironment: APNsEnvironment? = nil, encryption: APNsEncryption = .none, content: APNsContentMode = .full,
        endpoints: [APNsEnvironment: String] = [:]
    ) {
        self.keyID = keyID
        self.teamID = teamID
        self.topic = topic
        self.environment = environment
        self.forceEnvironment = forceEnvironment
        self.encryption = encryption
        self.content = content
        var all = APNsConfiguration.defaultEndpoints
        for (env, url) in endpoints { all[env] = APNsConfiguration.trimSlash(url) }
        self.endpoints = all
    }

    /// The environment a device is sent to: `force-environment`, else the device's own
    /// `environment` field, else the channel's `environment`.
    public func environment(for device: Device) -> APNsEnvironment {
        if let forceEnvironment { return forceEnvironment }
        if let raw = device.string("environment"), let env = APNsEnvironment(rawValue: raw) { return env }
        return environment
    }

    /// `<endpoint>/3/device/<hex token>`.
    public func url(environment: APNsEnvironment, token: String) -> String {
        (endpoints[environment] ?? APNsConfiguration.defaultEndpoints[environment] ?? "") + "/3/device/" + token
    }

    static func trimSlash(_ url: String) -> String {
        var out = Substring(url)
        while out.hasSuffix("/") { out = out.dropLast() }
        return String(out)
    }
}
