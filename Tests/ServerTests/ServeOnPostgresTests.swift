import Foundation
import HeraldHTTPTesting
import RouterTesting
import Testing

/// `herald serve` on several hosts sharing one PostgreSQL (issue #18): a notification id sent to
/// two servers is routed once, and while the database is away the API answers 503 and accepts
/// again by itself once it is back.
@Suite(.serialized) struct ServeOnPostgresTests {
    static func config(url: String, tokenYAML: String) -> (String, String) -> String {
        { _, listen in
            """
            version: 1
            store: { url: "\(url)" }
            channels:
              audit: { type: log }
            routes:
              default:
                - deliver: audit
            server:
              listen: \(listen)
              tokens:
            \(tokenYAML)
            """
        }
    }

    @Test func twoServersShareOneOutboxAndTheDatabaseGoingAwayIs503() async throws {
        let postgres = try TestPostgres.startSeparate()
        let url = try postgres.createDatabase()
        let (token, yaml) = ServeProcess.token(name: "hub", namespaces: ["default"], scopes: ["send", "read"])
        let a = try ServeProcess(config: Self.config(url: url, tokenYAML: yaml))
        let b = try ServeProcess(config: Self.config(url: url, tokenYAML: yaml))
        do {
            try await a.start()
            try await b.start()
            let body = #"{"id":"shared-1","title":"Deploy finished"}"#

            // The same id through two hosts: routed once; the second host replays the stored report.
            let first = try await RawHTTP.request(port: a.port, "POST", "/v1/notifications", token: token, json: body)
            #expect(first.status == 200, "\(first.text)")
            #expect(first.headers["herald-replayed"] == nil)
            let second = try await RawHTTP.request(port: b.port, "POST", "/v1/notifications", token: token, json: body)
            #expect(second.status == 200, "\(second.text)")
            #expect(second.headers["herald-replayed"] == "true")
            let record = try await RawHTTP.request(port: b.port, "GET", "/v1/notifications/shared-1", token: token)
            #expect(record.status == 200)
            let deliveries = (record.json?["deliveries"] as? [[String: Any]]) ?? []
            #expect(deliveries.count == 1, "one delivery to the log sink: \(record.text)")
            #expect(deliveries.first?["outcome"] as? String == "delivered")

            // The database goes away: a send is refused with 503 and nothing half-stored.
            try await postgres.stop()
            let refused = try await RawHTTP.request(
                port: a.port, "POST", "/v1/notifications", token: token, json: #"{"id":"during","title":"t"}"#)
            #expect(refused.status == 503, "\(refused.text)")
            #expect(refused.errorCode == "unavailable")
            #expect(!refused.text.contains("password"))

            // Back again: the same server accepts by itself, and the refused id was never stored.
            try postgres.restart()
            var accepted: RawResponse?
            for _ in 0..<50 {
                let r = try await RawHTTP.request(
                    port: a.port, "POST", "/v1/notifications", token: token, json: #"{"id":"during","title":"t"}"#)
                if r.status != 503 {
                    accepted = r
                    break
                }
                try await Task.sleep(for: .milliseconds(200))
            }
            let after = try #require(accepted)
            #expect(after.status == 200, "\(after.text)")
            #expect(after.headers["herald-replayed"] == nil, "the refused send stored nothing")
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
