import ChannelAPI
// herald-bench: Herald's benchmark executable. Each subcommand prints one line of figures;
// scripts/bench*.sh run them beside their references and BENCHMARKS.md records the results.
import Foundation

let usage = """
    usage: herald-bench <benchmark> [args]
      crypto SECONDS [stages]                          Web Push crypto pipeline, messages/s (CPU time)
      http URL CAFILE N INFLIGHT CONNECTIONS LOOPS [global]  1 KB POSTs to an HTTP/2 sink
      router-fanout DEVICES                            plan + persist one notification for N devices
      router-drain DEVICES                             persist N retries, then drain them
      router-persist DEVICES ROUNDS                    plan + persist one notification for N devices, median of ROUNDS
      router-send CONFIG                               the router's in-process send under CONFIG (devices in its store)
      router-store DELIVERIES ROUNDS [POSTGRES_URL]    the store alone: insert, claim, record (thread CPU and wall);
                                                       on PostgreSQL with a URL, else a fresh SQLite file per round
      apns BASEURL CAFILE DEVICES BATCH BATCHES_IN_FLIGHT CONNECTIONS LOOPS
      fcm ENDPOINT CAFILE SERVICE_ACCOUNT DEVICES BATCH
      webpush encrypt SECONDS SIZE PADDING | webpush send BASEURL CAFILE N LOOPS
      libs [SECONDS]                                   library vs hand-written Base64, HKDF, HTTP date, host key
      json [SECONDS]                                   Herald's JSON parser on a notification and a device, ns per parse
      api-reads NOTIFICATIONS DEVICES ROUNDS           before= paging and the summary's store reads, old and new
      exec TARGETS ROUNDS                              an exec channel whose child answers at once, notifications/s
      relay hapi|openchamber BASEURL CLIENTS SECONDS [TOKENS]  herald serve's relay endpoints, CLIENTS callers
      relay pulse BASEURL CLIENTS SECONDS [PACED_RATE] [SITES] [REFS]  signed Pulse site updates, full rate then paced
    """

/// `HERALD_BENCH_COALESCE=0` runs the HTTP benches with ``HTTPClientConfiguration/coalescesWrites`` off,
/// to measure what corking the connections is worth.
let benchCoalescesWrites = ProcessInfo.processInfo.environment["HERALD_BENCH_COALESCE"] != "0"

let args = Array(CommandLine.arguments.dropFirst())
func int(_ i: Int) -> Int? { args.count > i ? Int(args[i]) : nil }

do {
    switch args.first {
    case "relay" where args.count > 1 && args[1] == "pulse":
        print(try await PulseRelayBench.run(Array(args.dropFirst(2))))
    case "relay":
        print(try await RelayBench.run(Array(args.dropFirst())))
    case "exec":
        print(try await ExecBench.run(targets: int(1) ?? 10_000, rounds: int(2) ?? 20))
    case "crypto":
        print(
            try CryptoBench.run(
                seconds: Double(args.count > 1 ? args[1] : "5") ?? 5, stages: args.count > 2 && args[2] == "stages"))
    case "http":
        guard args.count >= 7, let n = int(3), let inflight = int(4), let conns = int(5), let loops = int(6) else {
            print(usage)
            exit(2)
        }
        print(
            try await HTTPBench.run(
                url: args[1], caFile: args[2], requests: n, inFlight: inflight, connections: conns, eventLoops: loops))
    case "api-reads":
        print(try APIReadsBench.run(notifications: int(1) ?? 44_000, devices: int(2) ?? 20_000, rounds: int(3) ?? 5))
    case "router-fanout":
        print(try await RouterBench.fanout(devices: int(1) ?? 10_000))
    case "apns":
        print(try await APNsBench.run(arguments: Array(args.dropFirst())))
    case "fcm":
        guard args.count >= 6 else {
            print(usage)
            exit(2)
        }
        print(
            try await FCMBench.run(
                endpoint: args[1], caFile: args[2], serviceAccount: args[3], devices: int(4) ?? 10_000,
                batch: int(5) ?? 10_000))
    case "webpush":
        try await WebPushBench.main(Array(args.dropFirst()))
    case "libs":
        print(try LibraryBench.run(seconds: Double(args.count > 1 ? args[1] : "1") ?? 1))
    case "json":
        print(try JSONBench.run(seconds: Double(args.count > 1 ? args[1] : "1") ?? 1))
    case "router-persist":
        print(try await RouterBench.persist(devices: int(1) ?? 10_000, rounds: int(2) ?? 7))
    case "router-send":
        guard args.count >= 2 else {
            print(usage)
            exit(2)
        }
        print(try await RouterBench.send(configPath: args[1]))
    case "router-drain":
        print(try await RouterBench.drain(devices: int(1) ?? 10_000))
    case "router-store":
        print(
            try StoreBench.run(deliveries: int(1) ?? 10_000, rounds: int(2) ?? 10, url: args.count > 3 ? args[3] : nil))
    default:
        print(usage)
        exit(2)
    }
} catch {
    print("herald-bench: \(error)")
    exit(1)
}
