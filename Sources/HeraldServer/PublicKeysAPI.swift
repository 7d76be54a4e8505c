import ChannelAPI
import HeraldMHD
import Router

/// The public keys of channels that offer one (``PublicKeyProviding``): any such channel's at
/// `GET /v1/channels/{name}/public-key`, and the first (or `?channel=`) of the channels making an
/// offer with a ``PublicKeyOffer/path`` at that path (Web Push: `/v1/webpush/vapid-public-key`).
/// Scope `read` or `devices`; 200 `{"publicKey":…,"channel":…}`.
struct PublicKeysAPI: APIResource {
    var routes: [APIRoute] {
        [
            APIRoute("GET", RoutePattern("/v1/channels/{name}/public-key"), access: .token(["read", "devices"])) {
                api, call in
                let name = call["name"]
                let provider = try PublicKeyLookup.channel(named: name, in: api.router).mapError(APIError.notFound)
                    .get()
                return try await PublicKeysAPI.answer(provider, channel: name)
            },
            APIRoute(
                "GET", .test(label: "an offer's path") { path, api in PublicKeysAPI.isOfferPath(path, api.router) },
                access: .token(["read", "devices"])
            ) { api, call in
                let path = call.request.path
                let found = try PublicKeyLookup.offering(
                    { $0.path == path }, named: call.request.query["channel"], describing: path, in: api.router
                ).mapError(APIError.notFound).get()
                return try await PublicKeysAPI.answer(found.provider, channel: found.name)
            },
        ]
    }

    /// The path itself (its metrics label) when a configured channel offers its key there.
    static func isOfferPath(_ path: String, _ router: Router) -> String? {
        for spec in router.config.channels {
            if let p = router.channel(named: spec.name) as? any PublicKeyProviding, p.hasPublicKey,
                p.publicKeyOffer?.path == path
            {
                return path
            }
        }
        return nil
    }

    static func answer(_ provider: any PublicKeyProviding, channel: String) async throws -> ServerResponse {
        let key = try await provider.publicKey(rotate: false)
        return HeraldAPI.json(200, ["publicKey": .string(key), "channel": .string(channel)])
    }
}

/// Why ``PublicKeyLookup`` found no channel (a message for people; 404 on the API).
public struct PublicKeyLookupError: Error, Sendable, CustomStringConvertible {
    /// What is missing.
    public let description: String
}

extension APIError {
    /// 404 `not_found` with the lookup's message.
    static func notFound(_ e: PublicKeyLookupError) -> APIError { .notFound(e.description) }
}

/// Finds the channel whose public key `herald keys` or the API is asked for, in the config's order.
public enum PublicKeyLookup {
    /// The channel `name`, when it provides a public key.
    public static func channel(named name: String, in router: Router) -> Result<
        any PublicKeyProviding, PublicKeyLookupError
    > {
        guard let channel = router.channel(named: name) else {
            return .failure(PublicKeyLookupError(description: "no channel \(name)"))
        }
        guard let provider = channel as? any PublicKeyProviding, provider.hasPublicKey else {
            return .failure(PublicKeyLookupError(description: "channel \(name) does not provide a public key"))
        }
        return .success(provider)
    }

    /// The first channel whose offer satisfies `matches` (named `wanted` when given); `offer`
    /// describes the offer in the message when no channel makes it (a command or a path).
    public static func offering(
        _ matches: (PublicKeyOffer) -> Bool, named wanted: String?, describing offer: String, in router: Router
    ) -> Result<(name: String, provider: any PublicKeyProviding, offer: PublicKeyOffer), PublicKeyLookupError> {
        var types: [String] = []
        for spec in router.config.channels {
            guard let provider = router.channel(named: spec.name) as? any PublicKeyProviding, provider.hasPublicKey,
                let made = provider.publicKeyOffer, matches(made)
            else { continue }
            if wanted == nil || wanted == spec.name { return .success((spec.name, provider, made)) }
            if !types.contains(spec.type) { types.append(spec.type) }
        }
        guard let wanted else {
            return .failure(PublicKeyLookupError(description: "the config has no channel offering \(offer)"))
        }
        let kind = types.isEmpty ? "" : types.joined(separator: " or ") + " "
        return .failure(PublicKeyLookupError(description: "no \(kind)channel named \(wanted)"))
    }
}
