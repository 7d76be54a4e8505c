import ChannelAPI
import Foundation
import HeraldMHD
import Router

/// Notifications: send (`POST /v1/notifications`, the report streamed or `wait=none`), the history
/// (`GET /v1/notifications`, `GET /v1/notifications/{id}`), lifecycle events
/// (`POST /v1/notifications/{id}/events`) and wait-for-action (`GET /v1/notifications/{id}/action`).
struct NotificationsAPI: APIResource {
    var routes: [APIRoute] {
        [
            APIRoute("GET", RoutePattern("/v1/notifications"), access: .token(["read"]), subject: "notification") {
                api, call in try api.listNotifications(call.request, token: try call.token)
            },
            APIRoute(
                "POST", RoutePattern("/v1/notifications"), access: .token(["send"]), subject: "notification",
                writesStore: true
            ) { api, call in try await api.send(call.request, token: try call.token) },
            APIRoute("GET", RoutePattern("/v1/notifications/{id}"), access: .token(["read"])) { api, call in
                try api.notification(call["id"], token: try call.token, request: call.request)
            },
            APIRoute(
                "POST", RoutePattern("/v1/notifications/{id}/events"), access: .token(["events"]), subject: "event",
                writesStore: true
            ) { api, call in try await api.recordEvent(call.request, id: call["id"], token: try call.token) },
            APIRoute("GET", RoutePattern("/v1/notifications/{id}/action"), access: .token(["read"])) { api, call in
                try await api.waitForAction(call.request, id: call["id"], token: try call.token)
            },
        ]
    }
}

extension HeraldAPI {
    func send(_ request: ServerRequest, token: APIToken) async throws -> ServerResponse {
        let body = try HeraldAPI.jsonObject(request)
        let notification = try HeraldNotification(json: body)
        try requireCovers(token, notification.namespace)
        let waitNone: Bool
        switch request.query["wait"] {
        case nil: waitNone = false
        case "none": waitNone = true
        case let other?: throw APIError.badParameter("wait", "only wait=none is known, got \(other)")
        }
        let replayed: [(name: String, value: String)] = [("Herald-Replayed", "true")]
        if waitNone {
            do {
                // Stored with the sends arriving meanwhile, in one transaction (group commit); the 202
                // comes after that commit. An id stored by this namespace fails alone in the batch,
                // with nothing written, and is answered below as a replay; an id another namespace
                // holds is stored under its scoped key (NotificationKey), as a new id would be.
                let planned = try await accepts.submit(notification).get()
                metrics.countNotification()
                return HeraldAPI.json(
                    202,
                    [
                        "id": .string(notification.id), "namespace": .string(notification.namespace),
                        "planned": .number(Double(planned)),
                    ])
            } catch StoreError.duplicateNotification {}
        }
        // Idempotent: never routed again. Ids are unique per namespace, so what is found is this
        // namespace's notification (another namespace's with the same id is neither found nor named).
        let (key, stored) = try router.storageKey(for: notification)
        if stored != nil {
            if waitNone {
                let deliveries = try router.store.deliveries(notificationId: key)
                return HeraldAPI.json(
                    202,
                    [
                        "id": .string(notification.id), "namespace": .string(notification.namespace),
                        "planned": .number(Double(deliveries.count)),
                    ], headers: replayed)
            }
        }
        if waitNone {
            // Refused as a duplicate, then gone (purged) before it was read: try again.
            return try await send(request, token: token)
        }
        let summary = try await router.sendSummarized(notification)
        // The replay is decided on one read of this namespace's key (Router.storageKey): a send of
        // another namespace stored meanwhile is never answered with its report. Checked again here.
        if summary.replayed, !token.covers(summary.namespace) || summary.namespace != notification.namespace {
            throw HeraldAPI.idInUse(notification.id)
        }
        if !summary.replayed { metrics.countNotification() }
        return reportResponse(summary, headers: summary.replayed ? replayed : [])
    }

    /// A send answered with another namespace's notification (409; never expected: ids are unique
    /// per namespace); it names nothing of that one.
    static func idInUse(_ id: String) -> APIError {
        APIError(409, "conflict", "notification id \(id) is already used; choose another id")
    }

    func listNotifications(_ request: ServerRequest, token: APIToken) throws -> ServerResponse {
        let ns = try HeraldAPI.namespaceParameter(request)
        try requireCovers(token, ns)
        var limit = 50
        if let l = request.query["limit"] {
            guard let n = Int(l), (1...500).contains(n) else {
                throw APIError.badParameter("limit", "must be a whole number from 1 to 500")
            }
            limit = n
        }
        let entries: [HistoryEntry]
        if let before = request.query["before"] {
            // Newest first: the page after `before`, by its position (keyset), not by reading up to it.
            let cursor = try router.notificationKeys(publicID: before, covering: { $0 == ns }).first?.key ?? before
            guard let page = try router.history(namespace: ns, before: cursor, limit: limit) else {
                throw APIError.badParameter("before", "no notification \(before) in namespace \(ns)")
            }
            entries = page
        } else {
            entries = try router.history(namespace: ns, limit: limit)
        }
        return HeraldAPI.json(200, ["notifications": .array(entries.map(\.json))])
    }

    /// The stored notification the client's `id` names in the token's namespaces (`?namespace=`
    /// narrows them); 404 alike for unknown and foreign ids. Ids are unique per namespace: when the
    /// token covers several namespaces that each sent `id`, `?namespace=` must say which (400).
    func visibleEntry(_ id: String, token: APIToken, request: ServerRequest) throws -> HistoryEntry {
        let first = try visibleKey(id, token: token, request: request)
        guard let entry = try router.history(id: first.key, limit: 1).first else {
            throw APIError.notFound("no notification \(id)")
        }
        return entry
    }

    /// The store key and namespace of the notification ``visibleEntry(_:token:request:)`` finds,
    /// without reading its deliveries and events.
    func visibleKey(_ id: String, token: APIToken, request: ServerRequest) throws -> (key: String, namespace: String) {
        let wanted = request.query["namespace"]
        let keys = try router.notificationKeys(
            publicID: id, covering: { token.covers($0) && (wanted == nil || $0 == wanted) })
        guard let first = keys.first else { throw APIError.notFound("no notification \(id)") }
        guard keys.count == 1 else {
            throw APIError.badParameter(
                "namespace",
                "notification id \(id) is used in namespaces \(keys.map(\.namespace).sorted().joined(separator: ", ")); "
                    + "add ?namespace= to choose one")
        }
        return first
    }

    func notification(_ id: String, token: APIToken, request: ServerRequest) throws -> ServerResponse {
        HeraldAPI.json(200, try visibleEntry(id, token: token, request: request).json)
    }

    func recordEvent(_ request: ServerRequest, id: String, token: APIToken) async throws -> ServerResponse {
        let body = try HeraldAPI.jsonObject(request)
        let known: Set<String> = ["kind", "action", "deviceId", "data"]
        for key in (body.objectValue ?? [:]).keys.sorted() where !known.contains(key) {
            throw APIError.invalid(
                ValidationError(field: key, "unknown field (expected kind, action, deviceId, data)"), subject: "event")
        }
        guard let kindText = body["kind"]?.stringValue, let kind = ChannelEvent.Kind(rawValue: kindText) else {
            throw APIError.invalid(
                ValidationError(field: "kind", "must be received, tapped, dismissed or action"), subject: "event")
        }
        let action = body["action"]
        if kind == .action {
            guard let a = action?.stringValue, !a.isEmpty else {
                throw APIError.invalid(
                    ValidationError(field: "action", "kind action needs the action id"), subject: "event")
            }
        } else if action != nil {
            throw APIError.invalid(
                ValidationError(field: "action", "only kind action takes an action"), subject: "event")
        }
        var deviceId: String?
        if let d = body["deviceId"] {
            guard let s = d.stringValue, !s.isEmpty else {
                throw APIError.invalid(
                    ValidationError(field: "deviceId", "must be a non-empty string"), subject: "event")
            }
            deviceId = s
        }
        var data: [String: String] = [:]
        if let d = body["data"] {
            guard let o = d.objectValue else {
                throw APIError.invalid(ValidationError(field: "data", "must be an object of strings"), subject: "event")
            }
            for (k, v) in o {
                guard let s = v.stringValue else {
                    throw APIError.invalid(ValidationError(field: "data.\(k)", "must be a string"), subject: "event")
                }
                data[k] = s
            }
        }
        let (key, namespace) = try visibleKey(id, token: token, request: request)
        // Stored with the events arriving meanwhile, in one transaction (group commit).
        let event = try await lifecycleEvents.submit(
            ChannelEvent(
                notificationId: key, kind: kind, actionId: action?.stringValue, actionData: data, deviceId: deviceId)
        ).get()
        // A local push waiting for this device's confirmation is delivered (a late one: the event only).
        if kind == .received, let deviceId {
            router.localStreams.confirm(namespace: namespace, notificationId: key, deviceId: deviceId)
        }
        return HeraldAPI.json(201, ["event": event.json])
    }

    func waitForAction(_ request: ServerRequest, id: String, token: APIToken) async throws -> ServerResponse {
        var seconds = 30
        if let t = request.query["timeout"] {
            guard let n = Int(t), (0...300).contains(n) else {
                throw APIError.badParameter("timeout", "must be a whole number of seconds from 0 to 300")
            }
            seconds = n
        }
        let key = try visibleEntry(id, token: token, request: request).notification.id
        try takeSlot(token, stream: false)
        defer { releaseSlot(token, stream: false) }
        // Woken by this process's router events; the store is read at least once a second, so an
        // action recorded by another process sharing the store (`herald event`) is seen too.
        let deadline = ContinuousClock.now + .seconds(seconds)
        while true {
            let generation = signal.generation
            if let event = try router.store.events(notificationId: key).first(where: { $0.kind == .action }) {
                return HeraldAPI.json(200, ["event": event.json])
            }
            let left = deadline - ContinuousClock.now
            if left <= .zero || Task.isCancelled || isStopping { return ServerResponse(status: 204) }
            await signal.wait(after: generation, timeout: min(left, .seconds(1)))
        }
    }
}
