import ChannelAPI
import Foundation
import Testing

@testable import SinkChannels

/// The log sink keeps its file open and follows log rotation: a moved or deleted file is replaced
/// by a new one at the configured path, and no line is lost or written twice.
@Suite struct LogChannelFileTests {
    func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-log-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    func deliver(_ channel: LogChannel, _ id: String) async -> DeliveryResult? {
        await channel.deliver(
            DeliveryRequest(
                notification: HeraldNotification(id: id, title: "t"),
                targets: [DeliveryTarget(device: nil, deliveryId: "d-\(id)")])
        ).first
    }

    func ids(_ url: URL) throws -> [String] {
        try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map {
            try JSONValue.parse(Array($0.utf8))["id"]?.stringValue ?? "?"
        }
    }

    @Test func linesAppendToOneFileCreatedWithItsFolder() async throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("sub/deliveries.jsonl")
        let channel = LogChannel(path: path.path, clock: SystemClock(), rotationCheck: .seconds(3600))
        for i in 1...3 { #expect(await deliver(channel, "n\(i)")?.outcome == .delivered) }
        #expect(try ids(path) == ["n1", "n2", "n3"])
    }

    @Test func aRotatedFileIsFollowedByANewOneAtThePath() async throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("deliveries.jsonl")
        let rotated = dir.appendingPathComponent("deliveries.jsonl.1")
        let channel = LogChannel(path: path.path, clock: SystemClock(), rotationCheck: .zero)
        #expect(await deliver(channel, "a")?.outcome == .delivered)
        #expect(await deliver(channel, "b")?.outcome == .delivered)
        try FileManager.default.moveItem(at: path, to: rotated)
        #expect(await deliver(channel, "c")?.outcome == .delivered)
        #expect(try ids(rotated) == ["a", "b"])
        #expect(try ids(path) == ["c"])
        // Deleted with its folder: both come back.
        try FileManager.default.removeItem(at: dir)
        #expect(await deliver(channel, "d")?.outcome == .delivered)
        #expect(try ids(path) == ["d"])
    }

    @Test func anUnwritablePathIsARetryNamingIt() async throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        // A folder where the file should be: open fails, the delivery is a retry naming the path.
        let path = dir.appendingPathComponent("taken")
        try FileManager.default.createDirectory(at: path, withIntermediateDirectories: true)
        let channel = LogChannel(path: path.path, clock: SystemClock(), rotationCheck: .zero)
        let result = try #require(await deliver(channel, "x"))
        #expect(result.outcome == .retry)
        #expect(result.reason?.contains(path.path) == true)
    }
}
