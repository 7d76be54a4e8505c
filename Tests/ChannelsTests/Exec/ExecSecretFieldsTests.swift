import ChannelAPI
import Foundation
import HeraldChannels
import Router
import RouterTesting
import Testing

/// The secret device fields an exec plugin declares in its handshake are redacted in device
/// listings, as a built-in platform's descriptor fields are; before the handshake every field is.
@Suite struct ExecSecretFieldsTests {
    /// A Gotify-like plugin: platform `gotify` with the secret field `appToken`.
    static let child = #"""
        import json, sys
        for line in sys.stdin:
            req = json.loads(line)
            m, rid = req.get("method"), req.get("id")
            if m == "handshake":
                out = {"protocol": 1, "platforms": [{"name": "gotify", "secretFields": ["appToken"]}], "configKeys": []}
            elif m == "validate":
                out = {"device": req["device"]}
            elif m == "deliver":
                out = {"results": [{"deliveryId": t["deliveryId"], "outcome": "delivered", "status": 200}
                                   for t in req["targets"]]}
            elif m == "shutdown":
                sys.stdout.write(json.dumps({"id": rid, "result": {}}) + "\n"); sys.stdout.flush(); break
            else:
                out = None
            answer = {"id": rid, "result": out} if out is not None else {"id": rid, "error": {"message": "unknown"}}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
        """#

    @Test func listingsRedactTheFieldsTheHandshakeDeclares() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "herald-exec-secret-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = dir.appendingPathComponent("gotify.py")
        try Self.child.write(to: script, atomically: true, encoding: .utf8)
        let yaml = """
            version: 1
            store: { path: \(dir.appendingPathComponent("herald.db").path) }
            channels:
              gotify: { type: exec, platforms: [gotify], command: [python3, "\(script.path)"] }
            routes:
              default:
                - deliver: [gotify]
            """
        let registry = HeraldChannels.registry
        let router = try await Router(
            config: try ConfigLoader.parse(yaml, registry: registry), registry: registry,
            options: RouterOptions(clock: ManualClock()))
        let appToken = "AbCdEf-gotify-app-token-0123"
        let device = Device(
            deviceId: "phone", platform: "gotify",
            fields: ["appToken": .string(appToken), "server": "https://g.example"])

        // Before the plugin has said which fields are secret, none is shown.
        let before = router.listingJSON(of: device)
        #expect(!before.canonicalString.contains(appToken))
        #expect(!before.canonicalString.contains("g.example"))
        #expect(before.objectValue?["deviceId"] == "phone")

        // Registering starts the plugin (its `validate`): its handshake names appToken.
        try await router.register(device)
        let listed = try #require(try router.devices().first)
        let after = router.listingJSON(of: listed)
        #expect(!after.canonicalString.contains(appToken))
        #expect(after.objectValue?["appToken"] == .string(Redaction.redacted))
        #expect(after.objectValue?["server"] == "https://g.example")
        await router.shutdown()
    }
}
