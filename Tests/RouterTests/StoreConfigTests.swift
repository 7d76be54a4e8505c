import ChannelAPI
import RouterTesting
import Testing

@testable import Router

/// `store.url`, `store.lease`, `store.cache`, `store.prepared-statements` and `HERALD_STORE_URL` (issue 18): precedence, and errors
/// with positions.
@Suite struct StoreConfigTests {
    static let rest = "channels:\n  a: { type: rec }\nroutes:\n  default:\n    - deliver: [a]\n"
    static let registry = ChannelRegistry(RecordingChannel().factory(type: "rec", platforms: ["ios"]))

    static func parse(_ store: String, environment: [String: String] = [:]) throws(ConfigError) -> HeraldConfig {
        try ConfigLoader.parse(
            "version: 1\nstore: \(store)\n" + rest, file: "h.yaml", environment: environment, registry: registry)
    }

    @Test func urlAndLeaseAreRead() throws {
        let c = try Self.parse("{ url: \"postgresql://herald@db:5432/herald?sslmode=verify-full\", lease: 15s }")
        #expect(c.storeURL == "postgresql://herald@db:5432/herald?sslmode=verify-full")
        #expect(c.storeLease == .seconds(15))
        let plain = try Self.parse("{ path: /tmp/x.db }")
        #expect(plain.storeURL == nil)
        #expect(plain.storeLease == nil)
    }

    @Test func theEnvironmentWinsOverTheFile() throws {
        let env = ["HERALD_STORE_URL": "postgresql://other@host/db"]
        #expect(
            try Self.parse("{ url: \"postgresql://herald@db/herald\" }", environment: env).storeURL
                == env["HERALD_STORE_URL"])
        #expect(try Self.parse("{ path: /tmp/x.db }", environment: env).storeURL == env["HERALD_STORE_URL"])
        #expect(try Self.parse("{ path: /tmp/x.db }", environment: ["HERALD_STORE_URL": ""]).storeURL == nil)
    }

    @Test func badValuesNameTheirPositionAndHideThePassword() {
        let wrong = #expect(throws: ConfigError.self) {
            try Self.parse("{ url: \"mysql://u:hunter2@db/x\" }")
        }
        #expect(wrong?.description.hasPrefix("h.yaml:2:15:") == true, "\(wrong?.description ?? "")")
        #expect(wrong?.description.contains("hunter2") == false)
        let lease = #expect(throws: ConfigError.self) { try Self.parse("{ lease: 0s }") }
        #expect(lease?.description.contains("store.lease must be between 1s and 1h") == true)
        let key = #expect(throws: ConfigError.self) { try Self.parse("{ host: db }") }
        #expect(key?.description.contains("expected path, url, lease, cache, prepared-statements") == true)
        let env = #expect(throws: ConfigError.self) {
            try Self.parse("{ path: /tmp/x.db }", environment: ["HERALD_STORE_URL": "db:5432"])
        }
        #expect(env?.description.contains("HERALD_STORE_URL must be a postgresql:// URL") == true)
    }

    /// `store.cache` sizes the SQLite page cache of the store a router opens (read back from SQLite);
    /// without it the store gets SQLite's default of 2 MiB; out of range or not a size is an error
    /// at its position.
    @Test func cacheSizesTheSQLitePageCache() async throws {
        let dir = Harness.tempPath()
        let sized = try Self.parse("{ path: \(dir)-a.db, cache: 512KiB }")
        #expect(sized.storeCache == 512 * 1024)
        #expect(try Self.parse("{ path: /tmp/x.db }").storeCache == nil)
        for (config, kib) in [(sized, 512), (try Self.parse("{ path: \(dir)-b.db }"), 2048)] {
            let router = try await Router(config: config, registry: Self.registry)
            let store = try #require(router.store as? SQLiteStore)
            #expect(try store.db.queryOne("PRAGMA cache_size")?.int("cache_size") == Int64(-kib))
            await router.shutdown()
        }
        for bad in ["64KiB", "2GiB", "lots", "-1MiB"] {
            let error = #expect(throws: ConfigError.self) { try Self.parse("{ cache: \(bad) }") }
            #expect(error?.description.hasPrefix("h.yaml:2:17:") == true, "\(error?.description ?? "")")
            #expect(error?.description.contains("store.cache must be a size from 128KiB to 1024MiB") == true)
        }
    }

    /// `store.prepared-statements` is on by default, reads a boolean, and reaches the PostgreSQL
    /// store a router opens; anything but a boolean is an error at its position.
    @Test func preparedStatementsReachThePostgresStore() async throws {
        let url = try TestPostgres.start().createDatabase()
        #expect(try Self.parse("{ url: \"\(url)\" }").storePreparedStatements)
        let off = try Self.parse("{ url: \"\(url)\", prepared-statements: false }")
        #expect(!off.storePreparedStatements)
        for (config, expected) in [(try Self.parse("{ url: \"\(url)\" }"), true), (off, false)] {
            let router = try await Router(config: config, registry: Self.registry)
            let store = try #require(router.store as? PostgresStore)
            #expect(store.db.preparedStatements == expected)
            await router.shutdown()
        }
        let bad = #expect(throws: ConfigError.self) { try Self.parse("{ prepared-statements: maybe }") }
        #expect(bad?.description.hasPrefix("h.yaml:2:31:") == true, "\(bad?.description ?? "")")
    }
}
