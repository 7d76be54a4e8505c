import ChannelAPI
import Foundation
import HeraldChannels
import HeraldHTTPTesting
import HeraldMHD
import HeraldPostgres
import HeraldSQLite
import HeraldServer
import RouterTesting
import Testing

@testable import Router

/// Issue #30, "herald serve under attack", items 6, 8 and 9: a store that cannot be written answers
/// 503 `unavailable` with `Retry-After` on every route (a full disk, a read-only store, an
/// unreachable database), `/healthz` follows the writes and turns 200 again by itself, a read-only
/// store is reopened read-write once it can be, and no answer says where the store is.
@Suite(.serialized) struct HonestFailureTests {
    static let token = "hrd_honest-failures"

    static var settings: ServerConfig {
        var s = ServerConfig()
        s.port = 0
        s.tokens = [
            APIToken(
                name: "ops", sha256: TokenAuthenticator.sha256Hex(of: token), namespaces: ["default"],
                scopes: ["send", "devices", "events", "read", "metrics"])
        ]
        return s
    }

    /// A router over a recording `fcm` channel (platform phone) on the store `store` makes at
    /// `home/herald.db`, with `clock` and `log`; its API.
    static func api(
        clock: ManualClock, log: RecordingLogSink, store: (String) throws -> any HeraldStore
    ) async throws -> (HeraldAPI, Router, String) {
        let fcm = RecordingChannel()
        var registry = try ChannelRegistry([fcm.factory(type: "rec-fcm", platforms: ["phone"])])
        for p in HeraldChannels.registry.platforms { try registry.register(platform: p) }
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("herald-honest-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let config = try ConfigLoader.parse(
            """
            version: 1
            store: { path: \(home)/herald.db }
            channels:
              fcm: { type: rec-fcm }
            routes:
              default:
                - deliver: [fcm]
            """, registry: registry)
        let router = try await Router(
            config: config, registry: registry,
            options: RouterOptions(clock: clock, logSink: log, store: try store(home + "/herald.db")))
        return (HeraldAPI(router: router, server: settings), router, home)
    }

    static func request(
        _ api: HeraldAPI, _ method: String, _ path: String, query: [String: String] = [:], json: String? = nil
    ) async -> ServerResponse {
        var headers = ["authorization": "Bearer \(token)"]
        if json != nil { headers["content-type"] = "application/json" }
        return await api.handle(
            ServerRequest(method: method, path: path, query: query, headers: headers, body: Array((json ?? "").utf8)))
    }

    static func text(_ r: ServerResponse) -> String { String(decoding: r.bodyBytes, as: UTF8.self) }

    static func healthz(_ api: HeraldAPI) async -> ServerResponse {
        await api.handle(ServerRequest(method: "GET", path: "/healthz"))
    }

    /// The write routes: a send (answered with its report), a queued send, a device registration and
    /// a lifecycle event on the notification `stored`.
    static let writeRoutes = ["send", "send wait=none", "register", "event"]

    /// One request of the write route `route`, with ids made of `id`.
    static func write(_ api: HeraldAPI, _ route: String, _ id: String, stored: String) async -> ServerResponse {
        switch route {
        case "send":
            await request(api, "POST", "/v1/notifications", json: #"{"id":"\#(id)","title":"t","body":"b"}"#)
        case "send wait=none":
            await request(
                api, "POST", "/v1/notifications", query: ["wait": "none"],
                json: #"{"id":"queued-\#(id)","title":"t","body":"b"}"#)
        case "register":
            await request(
                api, "POST", "/v1/devices",
                json: #"{"deviceId":"phone-\#(id)","platform":"phone","token":"tok-\#(id)-0123456789abcdef"}"#)
        default:
            await request(api, "POST", "/v1/notifications/\(stored)/events", json: #"{"kind":"tapped"}"#)
        }
    }

    /// Item 8: a full disk (SQLite's `max_page_count` at the file's size: every write that needs a
    /// new page fails with SQLITE_FULL, as on a full file system) answers 503 `unavailable` with
    /// `Retry-After` on every write route, never 500; `/healthz` is 503 while writes fail and 200 again
    /// by itself once space is back; every refused send, retried, is stored and delivered.
    @Test func aFullDiskIs503OnEveryRouteAndHealthzFollowsTheWrites() async throws {
        let clock = ManualClock()
        let log = RecordingLogSink()
        let (api, router, home) = try await Self.api(clock: clock, log: log) { try SQLiteStore(path: $0, clock: clock) }
        defer { try? FileManager.default.removeItem(atPath: home) }
        let store = try #require(router.store as? SQLiteStore)
        let before = await Self.request(api, "POST", "/v1/notifications", json: #"{"id":"before","title":"t"}"#)
        #expect(before.status == 200)
        #expect(await Self.healthz(api).status == 200)

        // The disk fills: the file may not grow. Writes that still fit in the free room of a table's
        // pages succeed; each route is repeated until its first refusal, and from then on every
        // write is refused (nothing refused takes room).
        try store.db.execute("PRAGMA max_page_count = 1")
        for route in Self.writeRoutes {
            var refused: ServerResponse?
            for i in 0..<5000 {
                let r = await Self.write(api, route, "fill-\(i)", stored: "before")
                if r.status >= 300 {
                    refused = r
                    break
                }
            }
            #expect(
                refused?.status == 503,
                "\(route): \(refused.map(Self.text) ?? "never refused") \(log.all.suffix(2))")
        }
        #expect(await Self.healthz(api).status == 503)

        // 25 rounds of every write route while the disk is full: all 503, none 500.
        let rounds = 25
        var statuses: [Int: Int] = [:]
        for n in 0..<rounds {
            for route in Self.writeRoutes {
                let r = await Self.write(api, route, "full-\(n)", stored: "before")
                statuses[r.status, default: 0] += 1
                #expect(r.status == 503, "\(route): \(r.status) \(Self.text(r))")
                guard r.status == 503 else { continue }
                #expect(r.header("Retry-After") == "5", "\(route)")
                #expect(Self.text(r).contains(#""code":"unavailable""#), "\(route): \(Self.text(r))")
                #expect(Self.text(r).contains("disk is full"), "\(route): \(Self.text(r))")
                #expect(!Self.text(r).contains(home), "\(route) names the store's path: \(Self.text(r))")
            }
        }
        #expect(statuses == [503: rounds * Self.writeRoutes.count])
        // healthz: 503 while writes fail, with the probe (at most one a second) failing too.
        clock.advance(by: .seconds(1))
        let full = await Self.healthz(api)
        #expect(full.status == 503)
        #expect(Self.text(full).contains("disk is full"), "\(Self.text(full))")
        #expect(full.header("Retry-After") == "5")
        #expect(!Self.text(full).contains(home))
        // The log has what the answers leave out: where.
        #expect(log.text.contains(home + "/herald.db"))

        // Space is back. No client writes: healthz's probe sees it (once its interval has passed).
        try store.db.execute("PRAGMA max_page_count = 1073741823")
        #expect(await Self.healthz(api).status == 503, "probed again within a second")
        clock.advance(by: .seconds(1))
        #expect(await Self.healthz(api).status == 200)

        // Nothing accepted was lost and every refused send is stored on retry (same ids).
        for n in 0..<rounds {
            let r = await Self.request(api, "POST", "/v1/notifications", json: #"{"id":"full-\#(n)","title":"t"}"#)
            #expect(r.status == 200, "\(Self.text(r))")
            #expect(r.header("Herald-Replayed") == nil, "full-\(n) was half-stored while the disk was full")
        }
        #expect(try router.store.notification(id: "before") != nil)
        #expect(try router.store.history(namespace: "default", id: nil, limit: 10_000).count >= rounds + 1)
        await router.shutdown()
    }

    /// Item 8: which failures are the store being unavailable (503) and which are not (500), with
    /// the reason an answer gives: an I/O error (any extended `SQLITE_IOERR_*`), a full disk, a
    /// read-only store, a lock, PostgreSQL's disk_full, read-only transaction, shutdown and
    /// connection failures; not a constraint, a syntax error or corrupt data.
    @Test func storeUnavailabilityIsClassifiedWithoutSayingWhere() {
        func reason(_ e: any Error) -> String? { StoreHealth.unavailableReason(of: e) }
        func sqlite(_ code: Int32, errno: Int32 = 0) -> SQLiteError {
            SQLiteError(code: code, call: "sqlite3_step", message: "m", systemErrno: errno, path: "/srv/herald.db")
        }
        #expect(reason(sqlite(10 | (2 << 8))) == "the store cannot be written (an I/O error)")  // IOERR_READ
        #expect(reason(sqlite(10 | (4 << 8), errno: ENOSPC)) == "the store's disk is full")  // IOERR_WRITE, ENOSPC
        #expect(reason(sqlite(13)) == "the store's disk is full")
        #expect(reason(sqlite(8)) == "the store is read-only")
        #expect(reason(sqlite(5)) == "the store is locked by another process")
        #expect(reason(sqlite(19)) == nil)  // SQLITE_CONSTRAINT
        #expect(reason(sqlite(1)) == nil)  // SQLITE_ERROR
        func pg(_ state: String?, connection: Bool = false) -> PostgresError {
            PostgresError(sqlState: state, call: "exec", message: "m", isConnectionFailure: connection)
        }
        #expect(reason(pg(nil, connection: true)) == "the store's database cannot be reached")
        #expect(reason(pg("53100")) == "the store's disk is full")
        #expect(reason(pg("25006")) == "the store is read-only")
        #expect(reason(pg("57P01")) == "the store's database cannot serve (SQLSTATE 57P01)")
        #expect(reason(pg("58030")) == "the store's database cannot serve (SQLSTATE 58030)")
        #expect(reason(pg("23505")) == nil)
        #expect(reason(pg("42601")) == nil)
        #expect(reason(StoreError.readOnly(path: "/srv/h.db", refused: "x", reason: "y")) == "the store is read-only")
        #expect(
            reason(StoreError.unreachable(store: "postgresql://u@db/h", detail: "d"))
                == "the store's database cannot be reached")
        #expect(reason(StoreError.corrupt("x")) == nil)
        #expect(reason(StoreError.unknownNotification("x")) == nil)
        #expect(reason(CancellationError()) == nil)
    }

    /// Item 8: a write failure remembered from one request makes `/healthz` 503 until a write succeeds
    /// (here a client's, before any probe is due).
    @Test func aSuccessfulWriteClearsTheRememberedFailure() async throws {
        let clock = ManualClock()
        let (api, router, home) = try await Self.api(clock: clock, log: RecordingLogSink()) {
            try SQLiteStore(path: $0, clock: clock)
        }
        defer { try? FileManager.default.removeItem(atPath: home) }
        let first = await Self.request(api, "POST", "/v1/notifications", json: #"{"id":"first","title":"t"}"#)
        #expect(first.status == 200)
        router.storeHealth.noteFailure("the store's disk is full", at: clock.now())
        // A probe has just run (none is due for a second): healthz answers from the failure.
        #expect(router.storeHealth.takeProbe(now: clock.now()))
        #expect(await Self.healthz(api).status == 503)
        // A replayed send writes nothing: the failure stays.
        let replay = await Self.request(api, "POST", "/v1/notifications", json: #"{"id":"first","title":"t"}"#)
        #expect(replay.header("Herald-Replayed") == "true")
        #expect(router.storeHealth.failure != nil)
        let sent = await Self.request(api, "POST", "/v1/notifications", json: #"{"id":"ok","title":"t"}"#)
        #expect(sent.status == 200)
        #expect(router.storeHealth.failure == nil)
        #expect(await Self.healthz(api).status == 200)
        await router.shutdown()
    }

    /// Item 6: the Home Assistant `registrationInfo.webhookId` (a credential) is redacted in the
    /// answers of `POST /v1/devices` and `GET /v1/devices`; the push token is shortened (issue 36).
    @Test func aHomeAssistantWebhookIdIsRedactedInAnswers() async throws {
        let clock = ManualClock()
        let (api, router, home) = try await Self.api(clock: clock, log: RecordingLogSink()) {
            try SQLiteStore(path: $0, clock: clock)
        }
        defer { try? FileManager.default.removeItem(atPath: home) }
        let webhookId = "a1b2c3d4e5f60718293a4b5c6d7e8f90aabbccddeeff00112233445566778899"
        let registered = await Self.request(
            api, "POST", "/v1/devices",
            json: """
                {"deviceId":"ha-phone","platform":"mobile-app","pushUrl":"https://mobile-apps.home-assistant.io/api/sendPush/iOS/v1",
                 "token":"ha-push-token-0123456789abcdef","registrationInfo":{"appId":"io.robbie.HomeAssistant",
                 "appVersion":"2024.1","osVersion":"17.2","webhookId":"\(webhookId)"}}
                """)
        #expect(registered.status == 200, "\(Self.text(registered))")
        let listed = await Self.request(api, "GET", "/v1/devices")
        #expect(listed.status == 200)
        for (what, r) in [("POST", registered), ("GET", listed)] {
            #expect(!Self.text(r).contains(webhookId), "\(what) /v1/devices echoes the webhookId: \(Self.text(r))")
            #expect(Self.text(r).contains(#""webhookId":"‹redacted›""#), "\(what): \(Self.text(r))")
            #expect(!Self.text(r).contains("a1b2"), "\(what): \(Self.text(r))")  // issue 36: nothing of it
            #expect(Self.text(r).contains(#""token":"ha-p…cdef""#), "\(what): \(Self.text(r))")
        }
        // Stored whole: the relay still gets it.
        let stored = try router.store.device(namespace: "default", deviceId: "ha-phone", platform: "mobile-app")
        #expect(stored?.fields["registrationInfo"]?["webhookId"]?.stringValue == webhookId)
        await router.shutdown()
    }

    // MARK: Read-only

    /// Mounts a tmpfs at a new directory; nil when this process may not mount (not root).
    static func mountTmpfs() -> String? {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ro-\(UUID().uuidString)").path
        guard (try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)) != nil,
            shell("mount -t tmpfs -o size=4m tmpfs '\(dir)'") == 0
        else { return nil }
        return dir
    }

    @discardableResult
    static func shell(_ command: String) -> Int32 {
        (try? Subprocess.run(executable: "/bin/sh", arguments: ["-c", command]))?.code ?? -1
    }

    static let canMount: Bool = {
        guard getuid() == 0, let dir = mountTmpfs() else { return false }
        shell("umount '\(dir)'")
        try? FileManager.default.removeItem(atPath: dir)
        return true
    }()

    /// Item 8 on a real full file system (a 4 MiB tmpfs filled with `dd`): after the first refusal,
    /// 100 sends (half queued with `wait=none`) are all 503 with `Retry-After`, none 500; `/healthz`
    /// is 503; once the filler is removed healthz turns 200 by itself and every refused send is
    /// stored on retry (none was half-stored).
    @Test(.enabled(if: canMount, "needs root to mount a tmpfs (CI runs as root)"))
    func aFullFileSystemIs503AndHealthzRecoversOnceSpaceIsFreed() async throws {
        let disk = try #require(Self.mountTmpfs())
        defer {
            Self.shell("umount '\(disk)'")
            try? FileManager.default.removeItem(atPath: disk)
        }
        let clock = ManualClock()
        let (api, router, home) = try await Self.api(clock: clock, log: RecordingLogSink()) { _ in
            try SQLiteStore(path: disk + "/herald.db", clock: clock)
        }
        defer { try? FileManager.default.removeItem(atPath: home) }
        #expect(
            await Self.request(api, "POST", "/v1/notifications", json: #"{"id":"before","title":"t"}"#).status == 200)
        Self.shell("dd if=/dev/zero of='\(disk)/filler' bs=64k 2>/dev/null")
        var refusedAt: Int?
        for i in 0..<5000 {
            let r = await Self.write(api, i % 2 == 0 ? "send" : "send wait=none", "fill-\(i)", stored: "before")
            if r.status >= 300 {
                #expect(r.status == 503, "\(Self.text(r))")
                refusedAt = i
                break
            }
        }
        #expect(refusedAt != nil, "the full file system never refused a send")
        let sends = 100
        var statuses: [Int: Int] = [:]
        for n in 0..<sends {
            let r = await Self.write(api, n % 2 == 0 ? "send" : "send wait=none", "full-\(n)", stored: "before")
            statuses[r.status, default: 0] += 1
            if r.status == 503 { #expect(r.header("Retry-After") == "5") }
            #expect(!Self.text(r).contains(disk))
        }
        #expect(statuses == [503: sends], "\(statuses)")
        clock.advance(by: .seconds(1))
        #expect(await Self.healthz(api).status == 503)

        Self.shell("rm -f '\(disk)/filler'")
        clock.advance(by: .seconds(1))
        let back = await Self.healthz(api)
        #expect(back.status == 200, "\(Self.text(back))")
        var retried: [Int: Int] = [:]
        for n in 0..<sends {
            let r = await Self.write(api, n % 2 == 0 ? "send" : "send wait=none", "full-\(n)", stored: "before")
            retried[r.status, default: 0] += 1
            #expect(r.header("Herald-Replayed") == nil, "full-\(n) was half-stored while the disk was full")
        }
        #expect(retried == [200: sends / 2, 202: sends / 2], "\(retried)")
        #expect(try router.store.notification(id: "before") != nil)
        await router.shutdown()
    }

    /// Item 9: a server started on a read-only file system (a read-only mount stops root too) answers
    /// 503 and recovers by itself once the file system is writable again: `/healthz` reopens the store
    /// read-write on its backoff (driven by the injected clock), and the next send is stored.
    @Test(.enabled(if: canMount, "needs root to mount a tmpfs (CI runs as root)"))
    func aReadOnlyStoreRecoversByItselfOnceWritable() async throws {
        let disk = try #require(Self.mountTmpfs())
        defer {
            Self.shell("umount '\(disk)'")
            try? FileManager.default.removeItem(atPath: disk)
        }
        let path = disk + "/herald.db"
        try SQLiteStore(path: path).close()
        #expect(Self.shell("mount -o remount,ro '\(disk)'") == 0)
        let clock = ManualClock()
        let (api, router, home) = try await Self.api(clock: clock, log: RecordingLogSink()) { _ in
            try SQLiteStore(path: path, clock: clock)
        }
        defer { try? FileManager.default.removeItem(atPath: home) }
        let store = try #require(router.store as? SQLiteStore)
        #expect(store.readOnlyReason != nil)

        let health = await Self.healthz(api)
        #expect(health.status == 503)
        #expect(Self.text(health).contains("read-only"), "\(Self.text(health))")
        #expect(!Self.text(health).contains(disk))
        for route in Self.writeRoutes where route != "event" {
            let r = await Self.write(api, route, "ro", stored: "nothing")
            #expect(r.status == 503, "\(route): \(Self.text(r))")
            #expect(r.header("Retry-After") == "5", "\(route)")
            #expect(!Self.text(r).contains(disk), "\(route): \(Self.text(r))")
        }

        // Writable again. The next attempt is due 1 s after the last (the backoff's first step).
        #expect(Self.shell("mount -o remount,rw '\(disk)'") == 0)
        #expect(await Self.healthz(api).status == 503, "reopened before the backoff allowed")
        clock.advance(by: .seconds(2))
        let back = await Self.healthz(api)
        #expect(back.status == 200, "\(Self.text(back))")
        #expect(store.readOnlyReason == nil)
        let sent = await Self.request(api, "POST", "/v1/notifications", json: #"{"id":"after-ro","title":"t"}"#)
        #expect(sent.status == 200, "\(Self.text(sent))")
        #expect(try router.store.notification(id: "after-ro") != nil)
        await router.shutdown()
    }

    /// Item 9, the backoff: attempts while the store stays read-only double their spacing (1, 2, 4 …
    /// 60 s on the store's clock), so a server polled often does not reopen its file often.
    @Test(.enabled(if: canMount, "needs root to mount a tmpfs (CI runs as root)"))
    func reopenAttemptsBackOff() async throws {
        let disk = try #require(Self.mountTmpfs())
        defer {
            Self.shell("umount '\(disk)'")
            try? FileManager.default.removeItem(atPath: disk)
        }
        let path = disk + "/herald.db"
        try SQLiteStore(path: path).close()
        #expect(Self.shell("mount -o remount,ro '\(disk)'") == 0)
        let clock = ManualClock()
        let store = try SQLiteStore(path: path, clock: clock)
        defer { store.close() }
        // Attempts at 0, 1, 3, 7 s; the file system becomes writable at 4 s: the store is still
        // read-only at 6 s and writable at 7 s.
        #expect(store.recoverWritable() != nil)
        clock.advance(by: .seconds(1))
        #expect(store.recoverWritable() != nil)
        clock.advance(by: .seconds(2))
        #expect(store.recoverWritable() != nil)
        clock.advance(by: .seconds(1))
        #expect(Self.shell("mount -o remount,rw '\(disk)'") == 0)
        clock.advance(by: .seconds(2))
        #expect(store.recoverWritable() != nil, "attempted before the 4 s step of the backoff")
        clock.advance(by: .seconds(1))
        #expect(store.recoverWritable() == nil)
        _ = try store.upsertDevice(
            Device(deviceId: "d", platform: "phone", fields: ["token": .string("t")]), now: clock.now())
        #expect(try store.devices(namespace: nil).count == 1)
    }

    // MARK: PostgreSQL

    /// Items 6 and 8 on PostgreSQL: with the database gone, `/healthz` and a send answer 503 without
    /// the host, port, user, database or `sslpassword` of `store.url`; the log has the URL without
    /// the `sslpassword`; healthz turns 200 by itself once the database is back.
    @Test func anUnreachableDatabaseIs503WithoutItsAddressOrSecrets() async throws {
        let postgres = try TestPostgres.startSeparate()
        let clock = ManualClock()
        let log = RecordingLogSink()
        let secret = "ssl-Pa55phrase-0f-the-key"
        do {
            let base = try postgres.createDatabase()
            let url = base + "?sslmode=disable&sslpassword=\(secret)"
            let (api, router, home) = try await Self.api(clock: clock, log: log) { _ in
                try PostgresStore(url: url, clock: clock)
            }
            defer { try? FileManager.default.removeItem(atPath: home) }
            #expect(await Self.healthz(api).status == 200)
            try await postgres.stop()
            let sent = await Self.request(api, "POST", "/v1/notifications", json: #"{"id":"pg","title":"t"}"#)
            clock.advance(by: .seconds(1))
            let health = await Self.healthz(api)
            let database = String(base.split(separator: "/").last ?? "")
            for (what, r) in [("send", sent), ("healthz", health)] {
                #expect(r.status == 503, "\(what): \(Self.text(r))")
                #expect(r.header("Retry-After") == "5", "\(what)")
                for leak in ["127.0.0.1", ":\(postgres.port)", database, secret, "postgresql://"] {
                    #expect(!Self.text(r).contains(leak), "\(what) shows \(leak): \(Self.text(r))")
                }
            }
            #expect(log.text.contains(database), "the log says where: \(log.text)")
            #expect(!log.text.contains(secret), "the log has the sslpassword")
            // Back: healthz probes once a second of the injected clock until a write commits (a
            // pooled connection lost with the server may fail the first probe).
            try postgres.restart()
            var statuses: [Int] = []
            for _ in 0..<20 where statuses.last != 200 {
                clock.advance(by: .seconds(1))
                statuses.append(await Self.healthz(api).status)
            }
            #expect(statuses.last == 200, "\(statuses)")
            await router.shutdown()
        } catch {
            await postgres.shutDown()
            throw error
        }
        await postgres.shutDown()
    }
}
