import ChannelAPI
import Foundation
import FuzzInput
import HeraldChannels
import HeraldHTTP
import HeraldServer

@testable import Router

/// Shared across runs: building an HTTP client per input would measure thread start-up.
private let http = try? HTTPClient(configuration: HTTPClientConfiguration())
private let store = try? SQLiteStore(path: ":memory:")
private let environment = ["HERALD_FUZZ_TOKEN": "123456:fuzz", "HERALD_FUZZ_PORT": "8443", "EMPTY": ""]

/// Drops log lines: the fuzzer's output is its own.
private struct DiscardingLogSink: LogSink {
    func write(_ record: LogRecord) {}
}

/// libFuzzer entry: YAML text → the whole of `herald validate` (schema, `${VAR}` expansion, the
/// `server:` section, every channel factory). The answer is a config or a `ConfigError`; never a trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let http, let store else { return 0 }
    let input = FuzzInput(data, size)
    let registry = HeraldChannels.registry
    guard
        let config = try? ConfigLoader.parse(
            input.text, file: "fuzz.yaml", baseDirectory: "/nonexistent", environment: environment,
            registry: registry)
    else { return 0 }
    _ = try? ServerConfig(config)
    _ = try? RouterGraph.build(
        config: config, registry: registry, http: http, clock: SystemClock(), random: SystemRandom(),
        logSink: DiscardingLogSink(), store: store)
    return 0
}
