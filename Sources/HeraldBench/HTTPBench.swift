import ChannelAPI
import Foundation
import HeraldHTTP

/// The HTTP client benchmark: many 1 KB JSON POSTs to a local HTTP/2 TLS sink with a fixed number in flight.
enum HTTPBench {
    /// Sends `requests` POSTs of a 1 KB JSON body to `url`, keeping `inFlight` requests outstanding in total.
    /// - Parameters:
    ///   - url: The sink URL, for example `https://127.0.0.1:PORT/3/device/abc`.
    ///   - caFile: The sink's CA certificate (PEM).
    ///   - requests: Total number of requests.
    ///   - inFlight: Requests outstanding at any time, over all event loops.
    ///   - connections: Most connections in total; each loop gets `connections / eventLoops` (at least 1).
    ///   - eventLoops: Number of client event loops.
    ///   - onEventLoops: Run the sending tasks on the client's loops (``HTTPClient/taskExecutor()``), so that
    ///     a response resumes its sender without a thread hop; `false` runs them on the global executor.
    /// - Returns: One JSON line: `n`, `ok`, `seconds`, `rps`, `inflight`, `maxconn`, `loops`, `connections`
    ///   (opened by the client) and `peak_rss_kb` (VmHWM of this process).
    static func run(
        url: String, caFile: String, requests: Int, inFlight: Int, connections: Int, eventLoops: Int,
        onEventLoops: Bool = true
    ) async throws -> String {
        let loops = max(1, eventLoops)
        let perLoopConnections = max(1, connections / loops)
        let client = try HTTPClient(
            configuration: HTTPClientConfiguration(
                caFile: caFile, maxConnectionsPerHost: perLoopConnections,
                maxConcurrentStreams: max(100, inFlight), eventLoops: loops,
                coalescesWrites: benchCoalescesWrites))
        var body = [UInt8](repeating: UInt8(ascii: "a"), count: 1024)
        body.replaceSubrange(0..<17, with: Array(#"{"aps":{"alert":""#.utf8))
        body.replaceSubrange(1021..<1024, with: Array(#""}}"#.utf8))
        let request = HTTPRequest(
            url: url,
            headers: [HTTPHeader("content-type", "application/json"), HTTPHeader("apns-push-type", "alert")],
            body: body)

        let started = ContinuousClock.now
        // `inFlight` workers, each sending its share back to back: exactly `inFlight` requests outstanding
        // (until the tail), without a task per request.
        let workers = max(1, min(inFlight, requests))
        let succeeded = await withTaskGroup(of: Int.self) { group in
            for worker in 0..<workers {
                let share = requests / workers + (worker < requests % workers ? 1 : 0)
                group.addTask(executorPreference: onEventLoops ? client.taskExecutor() : nil) {
                    var ok = 0
                    for _ in 0..<share {
                        if let response = try? await client.send(request), response.status == 200 { ok += 1 }
                    }
                    return ok
                }
            }
            var total = 0
            for await ok in group { total += ok }
            return total
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let opened = client.connectionsOpened
        await client.shutdown()
        let rps = seconds > 0 ? Double(requests) / seconds : 0
        return String(
            format:
                #"{"client":"herald","executor":"\#(onEventLoops ? "loop" : "global")","n":%d,"ok":%d,"seconds":%.3f,"rps":%.0f,"inflight":%d,"maxconn":%d,"loops":%d,"connections":%d,"peak_rss_kb":%d}"#,
            requests, succeeded, seconds, rps, inFlight, perLoopConnections * loops, loops, opened, peakRSSKilobytes())
    }

    /// `VmHWM` from `/proc/self/status`, in kB; 0 when unavailable.
    static func peakRSSKilobytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? 0
        }
        return 0
    }
}
