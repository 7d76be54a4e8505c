// swift-tools-version:6.0
// Herald: a notification router. System libraries come from Debian (see README.md).
import PackageDescription

let package = Package(
    name: "Herald",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ChannelAPI", targets: ["ChannelAPI"]),
        .library(name: "ChannelSupport", targets: ["ChannelSupport"]),
        .library(name: "Router", targets: ["Router"]),
        .library(name: "HeraldChannels", targets: ["HeraldChannels"]),
        .library(name: "RouterTesting", targets: ["RouterTesting"]),
        .library(name: "ChannelTesting", targets: ["ChannelTesting"]),
        .library(name: "HeraldHTTPTesting", targets: ["HeraldHTTPTesting"]),
        .library(name: "HeraldServer", targets: ["HeraldServer", "HeraldMHD"]),
        .executable(name: "herald", targets: ["herald"]),
        .library(name: "HeraldCommand", targets: ["HeraldCommand"]),
        .library(name: "NtfyChannel", targets: ["NtfyChannel"]),
        .executable(name: "herald-bench", targets: ["HeraldBench"]),
    ],
    targets: [
        // C: one system-library target per C library, plus one shim for variadic/macro APIs.
        .systemLibrary(
            name: "COpenSSL", path: "Sources/C/COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CCurl", path: "Sources/C/CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CSQLite", path: "Sources/C/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CYAML", path: "Sources/C/CYAML", pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]),
        .systemLibrary(
            name: "CSodium", path: "Sources/C/CSodium", pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(
            name: "CMicroHTTPD", path: "Sources/C/CMicroHTTPD", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(
            name: "CLibPQ", path: "Sources/C/CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .target(
            name: "CHeraldShims", dependencies: ["CCurl", "CSQLite", "COpenSSL"],
            path: "Sources/C/CHeraldShims"),

        // Support: the only Swift code that imports a C module. One wrapper per C library.
        .target(
            name: "HeraldCrypto", dependencies: ["COpenSSL", "CHeraldShims", "HeraldSodium"],
            path: "Sources/Support/HeraldCrypto"),
        .target(
            name: "HeraldHTTP", dependencies: ["ChannelAPI", "CCurl", "CHeraldShims", "HeraldSync"],
            path: "Sources/Support/HeraldHTTP"),
        .target(
            name: "HeraldSQLite", dependencies: ["CSQLite", "CHeraldShims", "HeraldSync", "HeraldSQL"],
            path: "Sources/Support/HeraldSQLite"),
        .target(name: "HeraldYAML", dependencies: ["CYAML", "ChannelAPI"], path: "Sources/Support/HeraldYAML"),
        .target(
            name: "HeraldPostgres", dependencies: ["CLibPQ", "HeraldSync", "HeraldSQL"],
            path: "Sources/Support/HeraldPostgres"),
        // The row and statement layer both database wrappers share; no C library of its own.
        .target(name: "HeraldSQL", path: "Sources/Support/HeraldSQL"),
        .target(name: "HeraldSodium", dependencies: ["CSodium"], path: "Sources/Support/HeraldSodium"),
        // The HTTP server of `herald serve` (GNU libmicrohttpd).
        .target(name: "HeraldMHD", dependencies: ["CMicroHTTPD", "HeraldSync"], path: "Sources/Support/HeraldMHD"),
        // Child processes (posix_spawn): the exec channel's plugins and the test kit's subprocesses.
        .target(name: "HeraldProcess", dependencies: ["CHeraldShims", "HeraldSync"], path: "Sources/Support/HeraldProcess"),
        // The one lock type (a POSIX mutex that sanitizers see); no C library of its own.
        .target(name: "HeraldSync", path: "Sources/Support/HeraldSync"),

        // Plugin contract (imports only Foundation), code several channels share, and the core.
        .target(name: "ChannelAPI"),
        .target(name: "ChannelSupport", dependencies: ["ChannelAPI", "HeraldCrypto", "HeraldHTTP"]),
        .target(
            name: "Router",
            dependencies: [
                "ChannelAPI", "HeraldHTTP", "HeraldSQL", "HeraldSQLite", "HeraldPostgres", "HeraldYAML", "HeraldSync",
            ]),

        // The HTTP API of `herald serve`: request values in, response values out, the router behind.
        .target(
            name: "HeraldServer",
            dependencies: ["ChannelAPI", "ChannelSupport", "Router", "HeraldMHD", "HeraldCrypto", "HeraldSync", "HeraldConsole"]),

        // Built-in channel modules.
        .target(
            name: "WebPushChannel", dependencies: ["ChannelAPI", "ChannelSupport", "HeraldCrypto", "HeraldSync"],
            path: "Sources/Channels/WebPush"),
        .target(
            name: "FCMChannel", dependencies: ["ChannelAPI", "ChannelSupport", "HeraldCrypto"],
            path: "Sources/Channels/FCM"),
        .target(
            name: "APNsChannel", dependencies: ["ChannelAPI", "ChannelSupport", "HeraldCrypto", "HeraldSync"],
            path: "Sources/Channels/APNs"),
        .target(
            name: "RelayChannel",
            dependencies: ["ChannelAPI", "ChannelSupport", "HeraldCrypto", "HeraldSodium", "HeraldSync"],
            path: "Sources/Channels/Relay"),
        .target(
            name: "TelegramChannel", dependencies: ["ChannelAPI", "ChannelSupport", "HeraldCrypto", "HeraldSync"],
            path: "Sources/Channels/Telegram"),
        .target(
            name: "SinkChannels", dependencies: ["ChannelAPI", "ChannelSupport", "HeraldCrypto", "HeraldSync"],
            path: "Sources/Channels/Sinks"),
        // `type: local`: straight to apps holding an open stream to herald serve, with confirmation.
        .target(name: "LocalChannel", dependencies: ["ChannelAPI", "ChannelSupport"], path: "Sources/Channels/Local"),
        // `type: exec`: a channel in any language, run as a child process (newline-delimited JSON).
        .target(
            name: "ExecChannel", dependencies: ["ChannelAPI", "HeraldSync", "HeraldProcess"], path: "Sources/Channels/Exec"),
        .target(
            name: "HeraldChannels",
            dependencies: [
                "ChannelAPI", "SinkChannels", "WebPushChannel", "FCMChannel", "APNsChannel", "RelayChannel",
                "TelegramChannel", "ExecChannel", "LocalChannel",
            ],
            path: "Sources/Channels/HeraldChannels"),

        // The operator console (`GET /console` of herald serve): its files built in, and the summary it reads.
        // Its files are embedded as byte arrays (`PackageResources`), so no bundle is needed at run time.
        .target(
            name: "HeraldConsole", dependencies: ["ChannelAPI", "Router"],
            resources: [
                .embedInCode("Console/console.css"), .embedInCode("Console/console.js"),
                .embedInCode("Console/index.html"), .embedInCode("Console/relays.js"),
            ]),

        // Fakes for channel authors and our own tests.
        .target(
            name: "RouterTesting",
            dependencies: [
                "ChannelAPI", "ChannelTesting", "Router", "HeraldHTTP", "HeraldSync", "HeraldYAML", "HeraldPostgres",
                "HeraldHTTPTesting",
            ]),
        // The pure kit a channel author links: conformance, the scripted transport, config from YAML,
        // clocks and fakes. No store, no PostgreSQL, no Python (`herald channels check` runs it).
        .target(name: "ChannelTesting", dependencies: ["ChannelAPI", "HeraldYAML", "HeraldSync"]),
        // The loopback HTTP/2 server (its Python is a resource) and the one subprocess runner for tests.
        .target(
            name: "HeraldHTTPTesting", dependencies: ["HeraldSync", "HeraldProcess"],
            resources: [.copy("Resources/fake_http_server.py")]),

        // Executables.
        // The command-line program as a library (a custom `herald` with more channel types is one
        // main.swift: Examples/CustomHerald), and the shipped `herald` over the built-in types.
        .target(
            name: "HeraldCommand",
            dependencies: ["Router", "HeraldChannels", "HeraldServer", "HeraldCrypto", "ChannelTesting"]),
        .executableTarget(name: "herald", dependencies: ["HeraldCommand", "HeraldChannels"]),
        .executableTarget(
            name: "HeraldBench",
            dependencies: [
                "HeraldCrypto", "HeraldHTTP", "HeraldSodium", "Router", "HeraldChannels", "RouterTesting",
                "ChannelSupport",
                "HeraldSQLite",
            ]),

        // Examples: a channel module built outside the built-in set, and a hub embedding the router.
        .target(
            name: "NtfyChannel", dependencies: ["ChannelAPI", "ChannelSupport"], path: "Examples/NtfyChannel",
            exclude: ["README.md", "fake_ntfy.py"]),
        .executableTarget(
            name: "EmbeddedHub", dependencies: ["Router", "HeraldChannels", "NtfyChannel"],
            path: "Examples/EmbeddedHub",
            exclude: ["README.md"]),

        // Tests (Swift Testing). Vectors live in each suite's Vectors/ folder.
        .testTarget(
            name: "HeraldCryptoTests", dependencies: ["HeraldCrypto", "HeraldHTTPTesting"], exclude: ["Vectors"]),
        .testTarget(name: "HeraldHTTPTests", dependencies: ["HeraldHTTP", "HeraldHTTPTesting"]),
        .testTarget(name: "HeraldSQLiteTests", dependencies: ["HeraldSQLite", "HeraldSync"]),
        .testTarget(name: "HeraldYAMLTests", dependencies: ["HeraldYAML"]),
        .testTarget(name: "HeraldPostgresTests", dependencies: ["HeraldPostgres", "RouterTesting"]),
        .testTarget(name: "HeraldSodiumTests", dependencies: ["HeraldSodium"]),
        .testTarget(name: "ChannelAPITests", dependencies: ["ChannelAPI", "HeraldCrypto", "HeraldSync"]),
        .testTarget(name: "ChannelSupportTests", dependencies: ["ChannelSupport", "HeraldCrypto", "RouterTesting"]),
        // Reads Package.swift and the sources: the layering rules of docs/architecture.md.
        .testTarget(name: "ModuleGraphTests"),
        // A deliberately broken channel (each rule of the conformance kit broken on demand), and a
        // `herald` built with it, so `herald channels check` is tested against it from the command line.
        .target(name: "BrokenChannels", dependencies: ["ChannelAPI"], path: "Tests/BrokenChannels"),
        .executableTarget(
            name: "BrokenHerald", dependencies: ["HeraldCommand", "HeraldChannels", "BrokenChannels"],
            path: "Tests/BrokenHerald"),
        .testTarget(
            name: "RouterTests",
            dependencies: [
                "Router", "RouterTesting", "HeraldHTTPTesting", "HeraldChannels", "HeraldHTTP", "HeraldSQLite",
                "HeraldSync", "ChannelSupport",
                "NtfyChannel", "BrokenChannels",
            ],
            exclude: ["Scripts"]),
        .testTarget(
            name: "ServerTests",
            dependencies: [
                "HeraldServer", "HeraldMHD", "Router", "RouterTesting", "HeraldHTTPTesting", "HeraldChannels",
                "HeraldCrypto", "HeraldSync",
            ],
            exclude: ["Scripts"]),
        .testTarget(
            name: "ConsoleTests",
            dependencies: [
                "HeraldConsole", "HeraldServer", "HeraldMHD", "Router", "RouterTesting", "HeraldChannels",
                "HeraldCrypto",
                "HeraldHTTPTesting",
            ],
            exclude: ["Scripts"]),
        .testTarget(
            name: "ChannelsTests",
            dependencies: ["HeraldChannels", "RouterTesting", "HeraldHTTPTesting", "HeraldSync"],
            exclude: ["Vectors", "Scripts"]),
    ]
)
