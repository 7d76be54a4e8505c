import ChannelAPI
import Dispatch
import Foundation
import HeraldChannels
import HeraldCrypto
import HeraldServer
import Router

/// `herald serve` (= `herald run` + the HTTP API) and `herald tokens new`.
enum ServeCommand {
    /// Refuses a public listen without tokens (a ``ConfigError`` at `listen`, exit 65) and returns the
    /// warnings a public listen without TLS deserves.
    static func check(_ s: ServerConfig, file: String) throws -> [String] {
        guard !s.isLoopback else { return [] }
        if s.tokens.isEmpty {
            throw ConfigError(
                file: file, mark: s.listenMark,
                "server.listen \(s.host):\(s.port) is not a loopback address and server.tokens is empty: "
                    + "anyone could send through this Herald. Add tokens (herald tokens new) or listen on 127.0.0.1")
        }
        if s.tls == nil {
            return [
                "herald: warning: server.listen \(s.host):\(s.port) is not loopback and server.tls is not set; "
                    + "terminate TLS in front of Herald"
            ]
        }
        return []
    }

    /// Refuses (a ``ConfigError``) a reloaded `server:` section that changes what only a restart
    /// applies: the listen address, TLS, `max-body`, `request-timeout` and `idle-timeout` are set
    /// when the socket opens. Tokens, rate limits, `keepalive` and `metrics-public` reload.
    static func checkRestartOnly(_ new: ServerConfig, running old: ServerConfig, file: String) throws {
        var changed: [String] = []
        if new.host != old.host || new.port != old.port {
            changed.append("listen (\(old.host):\(old.port) → \(new.host):\(new.port))")
        }
        if new.tls != old.tls { changed.append("tls") }
        if new.maxBody != old.maxBody { changed.append("max-body") }
        if new.requestTimeout != old.requestTimeout { changed.append("request-timeout") }
        if new.idleTimeout != old.idleTimeout { changed.append("idle-timeout") }
        if new.headerTimeout != old.headerTimeout { changed.append("header-timeout") }
        if new.maxConnections != old.maxConnections { changed.append("max-connections") }
        if new.maxConnectionsPerClient != old.maxConnectionsPerClient {
            changed.append("max-connections-per-client")
        }
        guard changed.isEmpty else {
            throw ConfigError(
                file: file, mark: new.listenMark,
                "server: \(changed.joined(separator: ", ")) changed; these apply only when herald serve starts: "
                    + "restart it (nothing was reloaded)")
        }
    }

    static func serve(configPath: String) async throws -> Int32 {
        try HeraldCLI.checkServerSection(configPath)
        let router = try await Router(configPath: configPath, registry: HeraldCLI.registry)
        do {
            let running = try ServerConfig(router.config)
            for w in try check(running, file: router.config.file) { eprint(w) }
            let server: HeraldServer
            do {
                server = try HeraldServer(router: router, server: running)
            } catch {
                throw RuntimeError("cannot start the HTTP server: \(error)")
            }
            let worker = Task { await router.run() }
            // All or nothing, one at a time (on the signal queue): the new config and every channel
            // of it are built and its server: section checked before anything goes live; a refusal
            // leaves the routes, channels and tokens in force as they were.
            let reload: @Sendable () -> Void = {
                do {
                    let prepared = try router.prepareReload()
                    let warnings: [String]
                    let next: ServerConfig
                    do {
                        next = try ServerConfig(prepared.config)
                        try checkRestartOnly(next, running: running, file: prepared.config.file)
                        warnings = try check(next, file: prepared.config.file)
                    } catch let e as ConfigError {
                        router.refuse(prepared, because: e)
                        throw e
                    }
                    for w in router.commit(prepared) { eprint(w.description) }
                    server.reload(server: next)
                    for w in warnings { eprint(w) }
                    eprint("herald: reloaded")
                } catch {
                    eprint("herald: reload refused, keeping the old config: \(error)")
                }
            }
            let stop: @Sendable () -> Void = {
                Task {
                    await server.stop()
                    worker.cancel()
                }
            }
            let signals = SignalPipe.install([SIGTERM, SIGINT, SIGHUP], queue: DispatchQueue(label: "herald.signals")) {
                signal in
                if signal == SIGHUP { reload() } else { stop() }
            }
            guard let signals else {
                await server.stop(grace: .zero)
                worker.cancel()
                throw UsageError("cannot install signal handlers (pipe failed)")
            }
            defer { signals.cancel() }
            let scheme = server.isTLS ? "https" : "http"
            let host = running.host.contains(":") ? "[\(running.host)]" : running.host
            eprint("herald: serving on \(scheme)://\(host):\(server.port) (SIGHUP reloads, SIGTERM stops)")
            await worker.value
            eprint("herald: stopped")
            await router.shutdown()
            return 0
        } catch {
            await router.shutdown()
            throw error
        }
    }

    /// `tokens new`: a fresh token (printed once) and its config entry.
    static func newToken(name: String, namespaces: [String], scopes: [String]) throws -> (token: String, yaml: String) {
        guard !name.isEmpty, name.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || "-_.".contains($0) })
        else { throw UsageError("--name must be letters, digits, '.', '-', '_'") }
        for s in scopes where !APIToken.knownScopes.contains(s) {
            throw UsageError("unknown scope '\(s)' (expected \(APIToken.knownScopes.sorted().joined(separator: ", ")))")
        }
        let token = "hrd_" + Base64.urlEncode(SecureRandom.bytes(32))
        let hash = TokenAuthenticator.sha256Hex(of: token)
        func list(_ items: [String]) -> String { "[" + items.map { "\"\($0)\"" }.joined(separator: ", ") + "]" }
        let yaml = """
                - name: \(name)
                  sha256: \(hash)
                  namespaces: \(list(namespaces))
                  scopes: \(list(scopes))
            """
        return (token, yaml)
    }
}
