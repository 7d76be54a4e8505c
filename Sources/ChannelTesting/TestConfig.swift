import ChannelAPI
import Foundation
import HeraldYAML

/// Builds a channel's ``ChannelConfig`` from YAML text, as the router does, so a channel author's
/// tests need no YAML library of their own.
public enum TestConfig {
    /// Why the YAML could not be read.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        public let description: String
    }

    /// The channel config of the mapping `yaml` (the channel's keys, without `type:`).
    public static func channel(
        _ yaml: String, name: String = "channel", file: String = "test.yaml", environment: [String: String] = [:],
        baseDirectory: String = FileManager.default.currentDirectoryPath, allowHosts: [String] = []
    ) throws -> ChannelConfig {
        let root: YAMLNode?
        do { root = try YAMLParser.parse(yaml) } catch { throw Failure(description: error.description) }
        guard let root else { throw Failure(description: "the config is empty") }
        return try ChannelConfig(
            name: name,
            node: ConfigNode(yaml: root, file: file, environment: environment, baseDirectory: baseDirectory),
            ignoring: ["type"], allowHosts: allowHosts)
    }
}
