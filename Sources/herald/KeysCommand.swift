import ChannelAPI
import Router

/// `herald keys vapid`: asks the Web Push channel for its applicationServerKey.
enum KeysCommand {
    static func vapid(router: Router, channel: String?, rotate: Bool) async throws -> String {
        let candidates = router.config.channels.filter {
            $0.type == "webpush" && (channel == nil || $0.name == channel)
        }
        guard let spec = candidates.first, let c = router.channel(named: spec.name) else {
            throw InputError(channel.map { "no webpush channel named \($0)" } ?? "the config has no webpush channel")
        }
        guard let provider = c as? any PublicKeyProviding else {
            throw InputError("channel \(spec.name) does not provide a public key")
        }
        return try await provider.publicKey(rotate: rotate)
    }
}
