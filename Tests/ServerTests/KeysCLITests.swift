import Foundation
import HeraldHTTPTesting
import Testing

/// Issue 31 §4: `herald keys` names no channel type: `keys vapid` is the Web Push channel's offer,
/// and `keys public --channel NAME` prints the key of any channel that provides one.
@Suite struct KeysCLITests {
    static func keys(_ home: String, _ arguments: [String]) throws -> Subprocess.Result {
        try ServeCLITests.herald(home, ["keys"] + arguments)
    }

    @Test func keysByOfferAndByChannelName() throws {
        let home = try ServeCLITests.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        try """
        version: 1
        store: { path: \(home)/herald.db }
        channels:
          console: { type: log, path: \(home)/deliveries.jsonl }
          browsers: { type: webpush, vapid: { subject: "mailto:ops@example.com" } }
        routes:
          default:
            - deliver: [console, browsers]
        """.write(toFile: home + "/herald.yaml", atomically: true, encoding: .utf8)
        let vapid = try Self.keys(home, ["vapid"])
        #expect(vapid.code == 0, "\(vapid.stderr)")
        let key = vapid.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(key.count == 87, "\(key)")  // base64url of a 65-byte point
        let json = try Self.keys(home, ["vapid", "--format", "json"])
        let o = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: String]
        #expect(o == ["applicationServerKey": key])
        let byName = try Self.keys(home, ["public", "--channel", "browsers"])
        #expect(byName.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == key)
        // A channel without a key, an offer nobody makes, no --channel: input errors, and a usage error.
        let noKey = try Self.keys(home, ["public", "--channel", "console"])
        #expect(noKey.code == 65 && noKey.stderr.contains("channel console does not provide a public key"))
        let unknown = try Self.keys(home, ["relay-key"])
        #expect(unknown.code == 65 && unknown.stderr.contains("no channel offering herald keys relay-key"))
        #expect(try Self.keys(home, ["public"]).code == 65)
        #expect(try Subprocess.run(executable: ServeCLITests.binary, arguments: ["keys"]).code == 2)
    }
}
