import ChannelAPI
import HeraldMHD
import Router

/// Device registrations: `POST`, `GET` and `DELETE /v1/devices` (http-api.md, Devices).
struct DevicesAPI: APIResource {
    var routes: [APIRoute] {
        // `?token=` on DELETE is a push token, not a credential.
        [
            APIRoute("GET", RoutePattern("/v1/devices"), access: .token(["read"], query: .parameter), subject: "device")
            {
                api, call in try api.listDevices(call.request, token: try call.token)
            },
            APIRoute(
                "POST", RoutePattern("/v1/devices"), access: .token(["devices"], query: .parameter), subject: "device",
                writesStore: true
            ) { api, call in try await api.registerDevice(call.request, token: try call.token) },
            APIRoute(
                "DELETE", RoutePattern("/v1/devices"), access: .token(["devices"], query: .parameter),
                subject: "device", writesStore: true
            ) { api, call in try api.removeDevices(call.request, token: try call.token) },
        ]
    }
}

extension HeraldAPI {
    func registerDevice(_ request: ServerRequest, token: APIToken) async throws -> ServerResponse {
        let body = try HeraldAPI.jsonObject(request)
        var device = try router.device(json: body)
        try requireCovers(token, device.namespace)
        // A push address held in a namespace the token does not cover is not moved from there: the
        // registration is refused (409), naming nothing of the other namespace.
        device.movableNamespaces = token.namespaces
        // Validated here, concurrently; stored with the registrations arriving meanwhile (group commit).
        let prepared = try await router.prepareRegistration(device)
        let upsert = try await registrations.submit(prepared).get()
        let result = await router.finishRegistration(prepared, upsert)
        var o = result.json(for: device).objectValue ?? [:]
        o["device"] = router.listingJSON(of: device)
        for key in ["namespace", "deviceId", "platform"] { o.removeValue(forKey: key) }
        if let stream = try localStreamAnswer(for: device) { o["stream"] = stream }
        return HeraldAPI.json(200, .object(o))
    }

    func listDevices(_ request: ServerRequest, token: APIToken) throws -> ServerResponse {
        let ns = try HeraldAPI.namespaceParameter(request)
        try requireCovers(token, ns)
        let list = try router.devices(namespace: ns)
        return HeraldAPI.json(200, ["devices": .array(list.map { router.listingJSON(of: $0) })])
    }

    func removeDevices(_ request: ServerRequest, token: APIToken) throws -> ServerResponse {
        let ns = try HeraldAPI.namespaceParameter(request)
        try requireCovers(token, ns)
        let n: Int
        if let id = request.query["deviceId"], !id.isEmpty {
            n = try router.unregister(namespace: ns, deviceId: id, platform: request.query["platform"])
        } else if let t = request.query["token"], !t.isEmpty {
            n = try router.unregister(namespace: ns, token: t)
        } else {
            throw APIError.badParameter("deviceId", "give deviceId (and optionally platform) or token")
        }
        guard n > 0 else { throw APIError.notFound("no device matched in namespace \(ns)") }
        return ServerResponse(status: 204)
    }
}
