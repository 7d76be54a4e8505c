import Foundation
import HeraldHTTPTesting
import RouterTesting
import Testing

/// Issue 35 across processes: two `herald serve` processes on one PostgreSQL, the app's stream held
/// by one and the notification sent (and confirmed) through the other. The push reaches the holder
/// by `NOTIFY`, the confirmation comes back, and a stream that closes is the cloud's turn (here a
/// `log` sink stands in for the cloud).
@Suite(.serialized) struct LocalPushOnPostgresTests {
    static func config(url: String, tokenYAML: String) -> (String, String) -> String {
        { home, listen in
            """
            version: 1
            store: { url: "\(url)" }
            channels:
              local: { type: local, confirm: 25s }
              cloud: { type: log, path: \(home)/cloud.jsonl }
            routes:
              default:
                - deliver: [local, cloud]
                  mode: first
            server:
              listen: \(listen)
              keepalive: 1s
              tokens:
            \(tokenYAML)
            """
        }
    }

    static func outcomes(_ r: RawResponse) -> [String: (outcome: String?, reason: String?)] {
        var out: [String: (outcome: String?, reason: String?)] = [:]
        for d in (r.json?["deliveries"] as? [[String: Any]]) ?? [] {
            if let c = d["channel"] as? String { out[c] = (d["outcome"] as? String, d["reason"] as? String) }
        }
        return out
    }

    @Test func theStreamHeldByTheOtherProcessConfirmsOrFallsBack() async throws {
        let postgres = try TestPostgres.startSeparate()
        let url = try postgres.createDatabase()
        let (token, yaml) = ServeProcess.token(
            name: "app", namespaces: ["default"], scopes: ["send", "devices", "events", "read"])
        let a = try ServeProcess(config: Self.config(url: url, tokenYAML: yaml))
        let b = try ServeProcess(config: Self.config(url: url, tokenYAML: yaml))
        do {
            try await a.start()
            try await b.start()
            let registered = try await RawHTTP.request(
                port: a.port, "POST", "/v1/devices", token: token,
                json: #"{"deviceId":"p1","platform":"phone","token":"tok-p1-0123456789abcdef"}"#)
            #expect(registered.status == 200, "\(registered.text)")
            let stream = try #require(registered.json?["stream"] as? [String: Any], "\(registered.text)")
            let path = try #require(stream["path"] as? String)
            let secret = try #require(stream["secret"] as? String)

            // The app holds its stream on a; the hub sends through b and the app confirms through b.
            let app = try await SSEClient.open(port: a.port, path: path, token: secret)
            #expect(app.head.status == 200)
            _ = try await app.read(until: { $0.contains { $0.event == "comment" } })
            let sending = Task {
                try await RawHTTP.request(
                    port: b.port, "POST", "/v1/notifications", token: token, json: #"{"id":"pg-1","title":"hi"}"#)
            }
            let events = try await app.read(until: { $0.contains { $0.event == "notification" } })
            let data = try #require(events.first { $0.event == "notification" }?.data)
            #expect(data.contains(#""id":"pg-1""#))
            let confirmed = try await RawHTTP.request(
                port: b.port, "POST", "/v1/notifications/pg-1/events", token: token,
                json: #"{"kind":"received","deviceId":"p1"}"#)
            #expect(confirmed.status == 201, "\(confirmed.text)")
            let first = Self.outcomes(try await sending.value)
            #expect(first["local"]?.outcome == "delivered")
            #expect(first["cloud"]?.outcome == "suppressed")

            // The stream on a closes while b waits for the confirmation: the cloud's turn.
            let dropping = Task {
                try await RawHTTP.request(
                    port: b.port, "POST", "/v1/notifications", token: token, json: #"{"id":"pg-2","title":"hi"}"#)
            }
            _ = try await app.read(until: { $0.contains { $0.event == "notification" } })
            app.close()
            let second = Self.outcomes(try await dropping.value)
            #expect(second["local"]?.outcome == "failed")
            #expect(second["local"]?.reason == "stream closed")
            #expect(second["cloud"]?.outcome == "delivered")

            // No stream anywhere now: not connected, at once.
            let third = Self.outcomes(
                try await RawHTTP.request(
                    port: b.port, "POST", "/v1/notifications", token: token, json: #"{"id":"pg-3","title":"hi"}"#))
            #expect(third["local"]?.reason == "not connected")
            #expect(third["cloud"]?.outcome == "delivered")
        } catch {
            await a.cleanUp()
            await b.cleanUp()
            await postgres.shutDown()
            throw error
        }
        await a.cleanUp()
        await b.cleanUp()
        await postgres.shutDown()
    }
}
