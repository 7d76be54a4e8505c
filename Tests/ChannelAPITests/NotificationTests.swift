import ChannelAPI
import Foundation
import HeraldCrypto
import Testing

@Suite struct NotificationTests {
    /// A notification sent without an id gets a fresh RFC 9562 version-4 UUID, which Foundation's
    /// `UUID(uuidString:)` reads back; two never share one.
    @Test func missingIdIsAFreshUUIDv4() throws {
        let a = try HeraldNotification(jsonText: #"{"title":"t"}"#).id
        let b = HeraldNotification(title: "t").id
        for id in [a, b] {
            let parsed = try #require(UUID(uuidString: id), "\(id)")
            #expect(parsed.uuidString.lowercased() == id)
            #expect(Array(id)[14] == "4" && "89ab".contains(Array(id)[19]), "\(id)")
        }
        #expect(a != b)
    }

    @Test func parsesContractExample() throws {
        let n = try HeraldNotification(
            jsonText: #"""
                {"namespace":"default","type":"permission-request","title":"Permission Request","body":"Claude Bash: rm -rf build",
                 "severity":"warning","url":"/sessions/5f0c","data":{"sessionId":"5f0c","sessionName":"claude - hapi","requestId":"r-17"},
                 "actions":[{"id":"approve","title":"Allow"},{"id":"deny","title":"Deny","destructive":true}],
                 "badge":3,"ttl":3600,"priority":"high","ios":{"sound":"ping.caf"},
                 "liveActivity":{"ref":"order-1024","event":"update","contentState":{"title":"Order #1024","revision":1793000000123}}}
                """#)
        #expect(n.type == "permission-request")
        #expect(n.severity == .warning)
        #expect(n.actions.map(\.id) == ["approve", "deny"])
        #expect(n.actions[1].destructive)
        #expect(n.collapseTag == "permission-request-5f0c")
        #expect(n.liveActivity?["contentState"]?["revision"]?.intValue == 1_793_000_000_123)
        #expect(!n.id.isEmpty)
        let again = try HeraldNotification(json: n.json)
        #expect(again == n)
    }

    @Test func defaults() throws {
        let n = try HeraldNotification(jsonText: #"{"body":"x"}"#)
        #expect(n.namespace == "default")
        #expect(n.type == "notification")
        #expect(n.collapseTag == nil)
    }

    @Test(arguments: [
        (#"{}"#, "title"), (#"{"title":3}"#, "title"), (#"{"title":"t","severity":"loud"}"#, "severity"),
        (#"{"title":"t","data":{"n":1}}"#, "data.n"), (#"{"title":"t","actions":[{"title":"x"}]}"#, "actions[0].id"),
        (#"{"title":"t","actions":[{"id":"a","title":"x"},{"id":"a","title":"y"}]}"#, "actions[1].id"),
        (#"{"title":"t","ttl":-1}"#, "ttl"), (#"{"title":"t","namespace":"a b"}"#, "namespace"),
        (#"{"title":"t","extra":1}"#, "extra"), (#"["title"]"#, "notification"), (#"{"title":"t""#, "notification"),
        (#"{"title":"t","priority":"urgent"}"#, "priority"), (#"{"title":"t","badge":1.5}"#, "badge"),
    ])
    func refusesBadInputNamingTheField(_ json: String, _ field: String) {
        #expect {
            try HeraldNotification(jsonText: json)
        } throws: { error in
            (error as? ValidationError)?.field == field
        }
    }

    /// Namespaces and types are 1-128 of A-Z a-z 0-9 . _ -, nothing else (no letter outside ASCII,
    /// no space, no fullwidth look-alike).
    @Test func namesAreASCIILettersDigitsDotUnderscoreDash() throws {
        let ok = "aZ09._-" + String(repeating: "x", count: 121)
        let n = try HeraldNotification(jsonText: #"{"title":"t","namespace":"\#(ok)","type":"Type.1_b-c"}"#)
        #expect(n.namespace == ok)
        #expect(n.type == "Type.1_b-c")
        for bad in ["", "é", "a b", "ａ", "a/b", "a:b", "ª", "٣", ok + "x"] {
            #expect(throws: ValidationError.self, "\(bad)") {
                try HeraldNotification(jsonText: #"{"title":"t","namespace":"\#(bad)"}"#)
            }
            #expect(throws: ValidationError.self, "\(bad)") {
                try HeraldNotification(jsonText: #"{"title":"t","type":"\#(bad)"}"#)
            }
        }
    }

    @Test func collapseIdCutsOnUTF8Boundary() {
        let tag = String(repeating: "é", count: 40)  // 80 bytes
        let cut = CollapseID.truncate(tag, maxBytes: 64)
        #expect(cut.utf8.count == 64)
        #expect(cut == String(repeating: "é", count: 32))
        let emoji = String(repeating: "a", count: 62) + "😀"  // 66 bytes; the emoji must go whole
        #expect(CollapseID.truncate(emoji, maxBytes: 64) == String(repeating: "a", count: 62))
        let n = HeraldNotification(type: "ready", title: "t", data: ["sessionId": String(repeating: "ü", count: 40)])
        #expect(n.collapseTag?.utf8.count ?? 0 <= 64)
        #expect(n.collapseTag?.hasPrefix("ready-ü") == true)
    }
}

@Suite struct PolicyTests {
    @Test func urlPolicy() throws {
        try URLPolicy.check("https://fcm.googleapis.com/wp/abc", field: "e", allowHosts: [])
        for bad in [
            "http://push.example.com/x", "https://127.0.0.1/x", "https://10.1.2.3/x", "https://192.168.0.1/",
            "https://localhost:8443/", "https://[::1]/x", "https://172.20.0.1/", "https://169.254.169.254/",
            "not a url",
        ] {
            #expect(throws: ValidationError.self, "\(bad)") { try URLPolicy.check(bad, field: "e", allowHosts: []) }
        }
        try URLPolicy.check("https://127.0.0.1:8443/x", field: "e", allowHosts: ["127.0.0.1"])
    }

    @Test func redaction() {
        #expect(Redaction.mask("short") == "‹redacted›")
        #expect(Redaction.mask("0123456789abcdefXYZ") == "0123…fXYZ")
        #expect(
            Redaction.scrub("url /bot123:SECRET/sendMessage", secrets: ["123:SECRET"])
                == "url /bot‹redacted›/sendMessage")
    }

    @Test func loggerMasksSecretFields() {
        final class Sink: LogSink, @unchecked Sendable {
            var lines: [LogRecord] = []
            func write(_ record: LogRecord) { lines.append(record) }
        }
        let sink = Sink()
        let logger = ChannelLogger(source: "t", sink: sink, secrets: ["bot-secret-token"])
        logger.error(
            "failed with bot-secret-token",
            [
                "token": "abcdefabcdefabcdefabcdef", "pushKey": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",
                "status": "401",
            ])
        #expect(sink.lines[0].message == "failed with ‹redacted›")
        #expect(sink.lines[0].fields["token"] == "abcd…cdef")  // a device address: told apart, not shown
        #expect(sink.lines[0].fields["pushKey"] == "‹redacted›")  // a key: nothing of it
        #expect(sink.lines[0].fields["status"] == "401")
    }
}
