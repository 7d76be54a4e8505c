import ChannelAPI
import Foundation
import Testing

@testable import ExecChannel

/// The exec protocol's pure parts: request lines, answer lines, the handshake check, matching a
/// batch's results, the line buffer and the backoff.
@Suite struct ExecProtocolTests {
    static let device = Device(deviceId: "d1", platform: "gotify", fields: ["appToken": "tok-123456"])
    static let targets = [
        DeliveryTarget(device: device, deliveryId: "a", attempt: 1),
        DeliveryTarget(device: device, deliveryId: "b", attempt: 2),
    ]

    @Test func deliverLineCarriesNotificationTargetsAndBadge() throws {
        let n = HeraldNotification(id: "n1", title: "Disk full", body: "94%")
        let line = ExecProtocol.deliver(
            id: 7, request: DeliveryRequest(notification: n, targets: Self.targets, pendingBadge: 3))
        #expect(line.last == UInt8(ascii: "\n"))
        #expect(line.dropLast().firstIndex(of: UInt8(ascii: "\n")) == nil)
        let v = try JSONValue.parse(Array(line.dropLast()))
        #expect(v["id"] == 7)
        #expect(v["method"] == "deliver")
        #expect(v["notification"] == n.json)
        #expect(v["badge"] == 3)
        let t = try #require(v["targets"]?.arrayValue)
        #expect(t.count == 2)
        #expect(t[1]["deliveryId"] == "b")
        #expect(t[1]["attempt"] == 2)
        #expect(t[0]["device"] == Self.device.json)
    }

    @Test func otherRequestLines() throws {
        let h = try JSONValue.parse(
            Array(
                ExecProtocol.handshake(id: 1, channel: "g", platforms: ["gotify"], config: ["server": "x"]).dropLast()))
        #expect(
            h == [
                "id": 1, "method": "handshake", "protocol": 1, "channel": "g", "platforms": ["gotify"],
                "config": ["server": "x"],
            ])
        let v = try JSONValue.parse(Array(ExecProtocol.validate(id: 2, device: Self.device).dropLast()))
        #expect(v["device"] == Self.device.json)
        #expect(try JSONValue.parse(Array(ExecProtocol.shutdown(id: 3).dropLast())) == ["id": 3, "method": "shutdown"])
    }

    @Test func answersAreReadOrRefusedWithACode() {
        let refused: [(String, ExecProtocolError.Code)] = [
            ("not json", .notJSON), ("[1]", .wrongShape), (#"{"result":{}}"#, .wrongShape),
            (#"{"id":1.5,"result":{}}"#, .wrongShape), (#"{"id":"1","result":{}}"#, .wrongShape),
            (#"{"id":1}"#, .wrongShape), (#"{"id":1,"error":{}}"#, .wrongShape),
        ]
        for (line, code) in refused {
            guard case .failure(let e) = ExecProtocol.answer(Array(line.utf8)) else {
                Issue.record("accepted \(line)")
                continue
            }
            #expect(e.code == code, "\(line)")
        }
        #expect(
            ExecProtocol.answer(Array(#"{"id":4,"result":{"x":1}}"#.utf8))
                == .success(ExecAnswer(id: 4, result: ["x": 1], error: nil)))
        guard
            case .success(let e) = ExecProtocol.answer(Array(#"{"id":5,"error":{"message":"no","field":"room"}}"#.utf8))
        else {
            Issue.record("error answer refused")
            return
        }
        #expect(e.error?.message == "no")
        #expect(e.error?.field == "room")
    }

    @Test func handshakeMustMatchPlatformsAndConfigKeys() throws {
        let good: JSONValue = [
            "protocol": 1, "platforms": [["name": "gotify", "secretFields": ["appToken"]]],
            "configKeys": ["server", "token"], "secretConfigKeys": ["token"],
        ]
        let h = try ExecProtocol.handshake(good, platforms: ["gotify"], configKeys: ["server"]).get()
        #expect(h.secretFields(of: "gotify") == ["appToken"])
        #expect(h.secretConfigKeys == ["token"])
        func refusal(_ v: JSONValue, platforms: [String] = ["gotify"], keys: [String] = []) -> String? {
            if case .failure(let e) = ExecProtocol.handshake(v, platforms: platforms, configKeys: keys) {
                return e.message
            }
            return nil
        }
        #expect(
            refusal(good, platforms: ["gotify", "matrix"])?.contains(
                "declares platforms [gotify] but the config lists platforms: [gotify, matrix]") == true)
        #expect(refusal(good, keys: ["colour"])?.contains("unknown key 'colour'") == true)
        var v2 = good.objectValue ?? [:]
        v2["protocol"] = 2
        #expect(refusal(.object(v2))?.contains("protocol 2") == true)
        v2["protocol"] = 1
        v2["platforms"] = [["name": "gotify", "secretFields": "appToken"]]
        #expect(refusal(.object(v2))?.contains("secretFields") == true)
    }

    @Test func batchMatchesByDeliveryIdAndRefusesTheRest() {
        let answer: JSONValue = [
            "results": [
                ["deliveryId": "b", "outcome": "retry", "status": 429, "reason": "slow down", "retryAfter": 2.5],
                ["deliveryId": "zzz", "outcome": "delivered"],
                ["deliveryId": "b", "outcome": "delivered"],
                ["deliveryId": "a", "outcome": "suppressed"],
                ["outcome": "delivered"],
            ]
        ]
        let batch = ExecBatch(result: answer, targets: Self.targets)
        #expect(batch.results.map(\.deliveryId) == ["a", "b"])
        #expect(batch.results[0].outcome == .retry)
        #expect(batch.results[0].reason == ExecBatch.missingReason)
        #expect(batch.results[1].outcome == .retry)
        #expect(batch.results[1].retryAfter == .milliseconds(2500))
        #expect(batch.results[1].status == 429)
        #expect(batch.problems.map(\.code) == [.unknownDelivery, .unknownDelivery, .wrongShape, .wrongShape])
        let shapeless = ExecBatch(result: ["nope": 1], targets: Self.targets)
        #expect(shapeless.results.allSatisfy { $0.outcome == .retry })
        #expect(shapeless.problems.map(\.code) == [.wrongShape])
        let dead = ExecBatch(
            result: ["results": [["deliveryId": "a", "outcome": "dead", "status": 404]]], targets: Self.targets)
        #expect(dead.results[0].outcome == .dead)
        #expect(dead.results[0].deviceId == "d1")
    }

    @Test func lineBufferSplitsAndBoundsLines() {
        var b = ExecLineBuffer(maxLine: 8)
        #expect(b.append(Array("ab".utf8)[...]) == [])
        #expect(b.append(Array("c\nde\n".utf8)[...]) == [.line(Array("abc".utf8)), .line(Array("de".utf8))])
        #expect(b.append(Array("0123456789".utf8)[...]) == [.overlong(10)])
        #expect(b.append(Array("xx\nok\n".utf8)[...]) == [.line(Array("ok".utf8))])
        #expect(b.append(Array("tail".utf8)[...]) == [])
        #expect(b.finish() == Array("tail".utf8))
        #expect(b.finish() == nil)
    }

    @Test func backoffDoublesUpToItsMaximumOnTheGivenTime() {
        var b = ExecBackoff()
        let t0 = Date(timeIntervalSince1970: 1_000)
        #expect(b.wait(at: t0) == nil)
        b.failed(at: t0)
        #expect(b.wait(at: t0) == .seconds(1))
        #expect(b.wait(at: t0.adding(.seconds(1))) == nil)
        b.failed(at: t0)
        b.failed(at: t0)
        #expect(b.wait(at: t0) == .seconds(4))
        #expect(b.delay(afterFailures: 30) == .seconds(60))
        b.succeeded()
        #expect(b.wait(at: t0) == nil)
        #expect(b.failures == 0)
    }
}
