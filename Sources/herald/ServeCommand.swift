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
    static func check(_ config: HeraldConfig) throws -> [String] {
        let s = config.server
        guard !s.isLoopback else { return [] }
        if s.tokens.isEmpty {
            throw ConfigError(
                file: config.file, mark: s.listenMark,
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

    static func serve(configPath: String) async throws -> Int32 {
        let router = try await Router(configPath: configPath, registry: HeraldChannels.registry)
        do {
            for w in try check(router.config) { eprint(w) }
            let server: HeraldServer
            do {
                server = try HeraldServer(router: router, server: router.config.server)
            } catch {
                throw RuntimeError("cannot start the HTTP server: \(error)")
            }
            let worker = Task { await router.run() }
            let reload: @Sendable () -> Void = {
                Task {
                    do {
                        let warnings = try await router.reload()
                        for w in warnings { eprint(w.description) }
                        for w in try check(router.config) { eprint(w) }
                        server.reload(server: router.config.server)
                        eprint("herald: reloaded")
                    } catch {
                        eprint("herald: reload refused, keeping the old config: \(error)")
                    }
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
            let host =
                router.config.server.host.contains(":") ? "[\(router.config.server.host)]" : router.config.server.host
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
