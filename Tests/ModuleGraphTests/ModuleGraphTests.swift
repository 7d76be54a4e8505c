import Foundation
import Testing

/// The layering of the package (docs/architecture.md): a channel module never imports Router,
/// ChannelAPI imports only Foundation, and no C type reaches a public signature. Read from
/// Package.swift and the sources' imports, so a change that breaks a rule fails here.
@Suite struct ModuleGraphTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The channel modules: every target under Sources/Channels and the example channel.
    static func channelModules(_ g: ModuleGraph) -> [ModuleGraph.Target] {
        g.targets.values.filter { $0.path.hasPrefix("Sources/Channels/") || $0.path == "Examples/NtfyChannel" }
            .sorted { $0.name < $1.name }
    }

    /// The C modules: the system-library targets and the C shim target.
    static func cModules(_ g: ModuleGraph) -> Set<String> {
        Set(g.targets.values.filter { $0.kind == "systemLibrary" || $0.path.hasPrefix("Sources/C/") }.map(\.name))
    }

    @Test func theManifestIsReadWhole() throws {
        let g = try ModuleGraph.load(root: Self.root)
        for name in ["ChannelAPI", "ChannelSupport", "Router", "HeraldHTTP", "APNsChannel", "NtfyChannel", "CCurl"] {
            #expect(g.targets[name] != nil, "\(name) not found in Package.swift")
        }
        #expect(Self.channelModules(g).count >= 8)
        #expect(g.imports["APNsChannel"]?.contains("ChannelAPI") == true)
        #expect(g.targets["HeraldHTTP"]?.dependencies.contains("CCurl") == true)
    }

    /// Every package module a target imports is among its dependencies, directly or through them. An
    /// import outside that closure builds only when another target happened to build the module
    /// first: a clean CI build failed on a test importing HeraldHTTP without depending on it.
    @Test func everyImportedPackageModuleIsADependency() throws {
        let g = try ModuleGraph.load(root: Self.root)
        func closure(_ name: String) -> Set<String> {
            var seen: Set<String> = []
            var queue = g.targets[name]?.dependencies ?? []
            while let next = queue.popLast() {
                guard seen.insert(next).inserted else { continue }
                queue += g.targets[next]?.dependencies ?? []
            }
            return seen
        }
        for (name, imported) in g.imports.sorted(by: { $0.key < $1.key }) {
            let reachable = closure(name).union([name])
            for module in imported.sorted() where g.targets[module] != nil && !reachable.contains(module) {
                Issue.record("\(name) imports \(module) but does not depend on it (directly or through a dependency)")
            }
        }
    }

    @Test func noChannelModuleImportsRouter() throws {
        let g = try ModuleGraph.load(root: Self.root)
        for t in Self.channelModules(g) {
            #expect(!(g.imports[t.name] ?? []).contains("Router"), "\(t.name) imports Router")
            #expect(!t.dependencies.contains("Router"), "\(t.name) depends on Router")
        }
    }

    @Test func channelAPIImportsOnlyFoundation() throws {
        let g = try ModuleGraph.load(root: Self.root)
        let api = try #require(g.targets["ChannelAPI"])
        #expect(api.dependencies.isEmpty, "ChannelAPI depends on \(api.dependencies)")
        #expect(g.imports["ChannelAPI"] == ["Foundation"], "ChannelAPI imports \(g.imports["ChannelAPI"] ?? [])")
    }

    @Test func noCTypeInAPublicSignature() throws {
        let g = try ModuleGraph.load(root: Self.root)
        let cModules = Self.cModules(g)
        let cTypes = Self.cTypeNames
        for t in g.targets.values where t.kind != "testTarget" && !cModules.contains(t.name) {
            for file in ModuleGraph.swiftFiles(under: Self.root.appendingPathComponent(t.path)) {
                let source = try String(contentsOf: file, encoding: .utf8)
                guard !ModuleGraph.imports(in: source).isDisjoint(with: cModules) else { continue }
                let found = ModuleGraph.cTypesInPublicSignatures(source, cTypeNames: cTypes)
                #expect(found.isEmpty, "\(file.lastPathComponent): \(found)")
            }
        }
    }

    /// ChannelSupport reads HTTP dates with HeraldHTTP's `HTTPDate` (libcurl's `curl_getdate`), and
    /// imports it `internal`ly: the HTTP client is not part of what a channel importing
    /// ChannelSupport sees (a channel talks HTTP through ChannelAPI's `HTTPTransport` only).
    @Test func channelSupportImportsHeraldHTTPOnlyInternally() throws {
        let dir = Self.root.appendingPathComponent("Sources/ChannelSupport")
        var internalImports = 0
        for file in ModuleGraph.swiftFiles(under: dir) {
            let source = try String(contentsOf: file, encoding: .utf8)
            let exposed = Self.nonInternalImports(of: "HeraldHTTP", in: source)
            #expect(exposed.isEmpty, "\(file.lastPathComponent): \(exposed)")
            internalImports += source.split(separator: "\n").filter { $0 == "internal import HeraldHTTP" }.count
        }
        #expect(internalImports >= 1, "RetryAfter reads HTTP dates with HeraldHTTP's HTTPDate")
        #expect(
            Self.nonInternalImports(of: "HeraldHTTP", in: "import HeraldHTTP\n@_exported import HeraldHTTP\n").count
                == 2)
        #expect(Self.nonInternalImports(of: "HeraldHTTP", in: "internal import HeraldHTTP\n").isEmpty)
    }

    /// The lines of `source` importing `module` other than as `internal import` (or `private` /
    /// `fileprivate`).
    static func nonInternalImports(of module: String, in source: String) -> [String] {
        source.split(separator: "\n").map(String.init).filter { line in
            guard ModuleGraph.imports(in: line) == [module] else { return false }
            let first = line.split(separator: " ").first.map(String.init) ?? ""
            return !["internal", "private", "fileprivate"].contains(first)
        }
    }

    /// Type names of the C libraries Herald wraps (libcurl, OpenSSL, SQLite, libyaml, libsodium, libmicrohttpd).
    static let cTypeNames: Set<String> = [
        "CURL", "CURLM", "CURLSH", "CURLU", "CURLcode", "CURLMcode", "CURLMsg", "CURLoption", "curl_slist",
        "curl_socket_t", "curl_off_t", "EVP_PKEY", "EVP_PKEY_CTX", "EVP_MD_CTX", "EVP_CIPHER_CTX", "EVP_MAC",
        "EVP_MAC_CTX", "EVP_KDF", "EVP_KDF_CTX", "BIGNUM", "BN_CTX", "EC_KEY", "EC_GROUP", "EC_POINT", "ECDSA_SIG",
        "OSSL_PARAM", "BIO", "sqlite3", "sqlite3_stmt", "yaml_parser_t", "yaml_event_t", "yaml_mark_t",
        "crypto_secretbox_NONCEBYTES", "MHD_Daemon", "MHD_Connection", "MHD_Response", "MHD_Result", "MHD_ValueKind",
        "MHD_FLAG", "MHD_OptionItem", "MHD_AccessHandlerCallback", "MHD_ConnectionNotificationCode",
    ]

    // The checks themselves catch what they are meant to: a broken graph fails them.

    @Test func theChecksCatchABrokenGraph() {
        let manifest = """
            .target(name: "ChannelAPI", dependencies: ["HeraldHTTP"]),
            .target(
                name: "BadChannel", dependencies: ["ChannelAPI", "Router"],
                path: "Sources/Channels/Bad"),
            .systemLibrary(name: "CCurl", path: "Sources/C/CCurl", pkgConfig: "libcurl"),
            """
        let targets = ModuleGraph.parseTargets(manifest)
        #expect(targets.map(\.name) == ["ChannelAPI", "BadChannel", "CCurl"])
        #expect(targets[0].dependencies == ["HeraldHTTP"])
        #expect(targets[1].dependencies.contains("Router"))
        #expect(targets[1].path == "Sources/Channels/Bad")
        #expect(targets[2].kind == "systemLibrary")
        #expect(
            ModuleGraph.imports(in: "import Foundation\n@testable import Router\npublic import HeraldHTTP\n")
                == ["Foundation", "Router", "HeraldHTTP"])
        let leaky = """
            public final class Handle {
                public let raw: OpaquePointer
                public func easy() -> UnsafeMutablePointer<CURL>? { nil }
                public func bytes(_ p: UnsafePointer<UInt8>) {}
                public var code: CURLcode
                let hidden: OpaquePointer
            }
            """
        let found = ModuleGraph.cTypesInPublicSignatures(leaky, cTypeNames: Self.cTypeNames)
        #expect(found.count == 3, "\(found)")
        #expect(!found.contains { $0.contains("UnsafePointer<UInt8>") })
    }
}
