import ChannelAPI
import Foundation

/// `herald-bench json`: Herald's JSON parser on the documents it parses most, in thread-CPU
/// nanoseconds per parse (best of several rounds, so a burst of other load does not count): a
/// hub's notification as `POST /v1/notifications` receives it, the same parsed into a
/// ``HeraldNotification`` (validation and a generated id included), the same with its id as the
/// store keeps it, and a stored Web Push device's fields (read back for every chunk of a fan-out).
enum JSONBench {
    /// One document and what is done with it; returns a value depending on the work.
    private struct Case {
        let name: String
        let run: () throws -> Int
    }

    /// Runs each case for about `seconds` per round, `rounds` times, and returns one JSON line.
    static func run(seconds: Double, rounds: Int = 3) throws -> String {
        let notification = """
            {"type":"permission-request","title":"Permission Request","body":"Claude Bash: rm -rf build",\
            "url":"/sessions/5f0c","data":{"sessionId":"5f0c","sessionName":"claude - hapi","requestId":"r-17"},\
            "badge":3,"ttl":3600}
            """
        let device = """
            {"subscription":{"endpoint":"https://push.example.net/push/v2/gAAAAABn3x9Q0c7kLmNoPqRsTuVwXyZ",\
            "keys":{"auth":"Q2hhbmdlIG1lIGF1dGgu","p256dh":"BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM"}}}
            """
        // As the store keeps it: with its id (nothing to generate).
        let stored = "{\"id\":\"0194c3f2-7a1e-7c3b-9e0f-5d2a8b6c4e10\"," + notification.dropFirst()
        let cases = [
            Case(name: "notification", run: { try JSONValue.parse(notification).objectValue?.count ?? 0 }),
            Case(
                name: "notification_validated",
                run: { try HeraldNotification(jsonText: notification).title?.count ?? 0 }),
            Case(name: "stored_notification_validated", run: { try HeraldNotification(jsonText: stored).id.count }),
            Case(name: "device_fields", run: { try JSONValue.parse(device).objectValue?.count ?? 0 }),
        ]
        var best: [String: Double] = [:]
        var sink = 0
        for _ in 0..<max(1, rounds) {
            for c in cases {
                var calls = 0
                let start = threadCPUNanoseconds()
                let end = start + UInt64(seconds * 1e9)
                var now = start
                while now < end {
                    for _ in 0..<100 { sink &+= try c.run() }
                    calls += 100
                    now = threadCPUNanoseconds()
                }
                let perCall = Double(now - start) / Double(calls)
                best[c.name] = min(best[c.name] ?? .infinity, perCall)
            }
        }
        var out: [String: JSONValue] = [
            "bench": .string("json"), "unit": .string("ns per parse, thread CPU, best round"),
        ]
        for (name, ns) in best { out[name] = .number(ns.rounded()) }
        out["checksum"] = .number(Double(sink % 1000))
        return JSONValue.object(out).canonicalString
    }

    private static func threadCPUNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}
