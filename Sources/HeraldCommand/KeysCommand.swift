import ChannelAPI
import HeraldServer
import Router

/// `herald keys COMMAND [--channel NAME] [--rotate]`: prints the public key of a channel that
/// provides one. `public` takes any such channel by `--channel`; another command is a
/// ``PublicKeyOffer/command`` (`vapid` for Web Push), answered by the first channel making that
/// offer, or by `--channel`.
enum KeysCommand {
    /// The key and the JSON field `--format json` prints it in.
    static func key(_ command: String, router: Router, channel: String?, rotate: Bool) async throws -> (
        field: String, key: String
    ) {
        if command == "public" {
            guard let channel else { throw InputError("keys public needs --channel NAME") }
            let provider = try PublicKeyLookup.channel(named: channel, in: router).mapError(KeysCommand.input).get()
            return ("publicKey", try await provider.publicKey(rotate: rotate))
        }
        let found = try PublicKeyLookup.offering(
            { $0.command == command }, named: channel, describing: "herald keys \(command)", in: router
        ).mapError(KeysCommand.input).get()
        return (found.offer.jsonField, try await found.provider.publicKey(rotate: rotate))
    }

    static func input(_ e: PublicKeyLookupError) -> InputError { InputError(e.description) }
}
