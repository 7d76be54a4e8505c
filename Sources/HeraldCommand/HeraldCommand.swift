import ChannelAPI
import Foundation
import HeraldChannels

/// The `herald` command-line program as a library: every command (`validate`, `explain`, `send`,
/// `serve` with its reload and signals, `channels check`, …) over the channel types of a registry.
///
/// A `herald` with extra channel types is a package with one `main.swift`:
///
/// ```swift
/// import HeraldChannels
/// import HeraldCommand
/// import NtfyChannel
///
/// var registry = HeraldChannels.registry
/// try registry.register(NtfyChannel.factory)   // a taken type or platform throws
/// await HeraldCommand.main(registry: registry)
/// ```
///
/// `Examples/CustomHerald` is that package; docs/channels.md ("Shipping a herald with your channel").
public enum HeraldCommand {
    /// Runs the command line of this process with `registry`'s channel types and exits with the
    /// command's status (0 ok, 1 runtime failure, 2 usage, 65 invalid input or config).
    public static func main(
        registry: ChannelRegistry = HeraldChannels.registry,
        arguments: [String] = Array(CommandLine.arguments.dropFirst())
    ) async -> Never {
        exit(await run(arguments, registry: registry))
    }

    /// Runs one command line with `registry`'s channel types and returns its exit status.
    public static func run(_ arguments: [String], registry: ChannelRegistry = HeraldChannels.registry) async -> Int32 {
        await HeraldCLI.$registry.withValue(registry) { await HeraldCLI.run(arguments) }
    }
}
