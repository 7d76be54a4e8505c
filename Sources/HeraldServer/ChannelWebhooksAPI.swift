import ChannelAPI
import HeraldMHD
import Router

/// Inbound channel webhooks, `POST /v1/channels/{name}/{kind}` (Telegram's webhook mode): no
/// token, the channel checks its own secret.
struct ChannelWebhooksAPI: APIResource {
    var routes: [APIRoute] {
        [
            APIRoute("POST", RoutePattern("/v1/channels/{name}/{kind}"), access: .open, subject: "update") {
                api, call in try await api.channelWebhook(call.request, name: call["name"], kind: call["kind"])
            }
        ]
    }
}

extension HeraldAPI {
    func channelWebhook(_ request: ServerRequest, name: String, kind: String) async throws -> ServerResponse {
        let answer = await router.receiveWebhook(
            channel: name, InboundWebhook(kind: kind, headers: request.headers, body: request.body))
        switch answer {
        case nil: throw APIError.notFound("no channel \(name)")
        case .accepted?: return HeraldAPI.json(200, ["ok": true])
        case .unauthorized?: throw APIError(401, "unauthorized", "the webhook's secret does not match")
        case .invalid(let reason)?: throw APIError(422, "invalid_update", reason)
        case .notFound?: throw APIError.notFound("channel \(name) takes no \(kind) webhook")
        }
    }
}
