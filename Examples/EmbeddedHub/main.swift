// A hub that embeds Herald in-process: builds a router from a config value, registers a device,
// sends a permission request, and waits for the person's answer (see README.md).
//
//   swift run EmbeddedHub                                   # console only
//   NTFY_SERVER=https://ntfy.sh NTFY_TOPIC=my-secret-topic swift run EmbeddedHub
//
// The store is a temporary folder, removed when the hub ends (also after a failure).
import ChannelAPI
import Foundation
import HeraldChannels
import NtfyChannel
import Router

let environment = ProcessInfo.processInfo.environment
let home = FileManager.default.temporaryDirectory.appendingPathComponent("embedded-hub-\(getpid())").path
// The ntfy channel (Examples/NtfyChannel) is on when NTFY_SERVER names a server; the console
// channel takes over when ntfy does not deliver.
let ntfyServer = environment["NTFY_SERVER"].flatMap { $0.isEmpty ? nil : $0 }
let topic = environment["NTFY_TOPIC"].flatMap { $0.isEmpty ? nil : $0 } ?? "herald-demo"
let yaml = """
    version: 1
    store: { path: \(home)/herald.db }
    channels:
      console: { type: log, path: "-" }
      ntfy: { type: ntfy, server: "\(ntfyServer ?? "https://ntfy.sh")", enabled: \(ntfyServer != nil) }
    routes:
      default:
        - deliver: [ntfy]
        - deliver: [console]
          unless-delivered: [ntfy]
    """

/// Removes the temporary store.
func removeStore() { try? FileManager.default.removeItem(atPath: home) }

var registry = HeraldChannels.registry
try registry.register(NtfyChannel.factory)  // a plugin channel, registered by its type: name

do {
    let config = try ConfigLoader.parse(yaml, file: "embedded.yaml", registry: registry)
    let router = try await Router(config: config, registry: registry)
    try await router.register(Device(deviceId: "my-phone", platform: "ntfy", fields: ["topic": .string(topic)]))

    let events = router.events()
    let watcher = Task {
        for await event in events {
            if case .delivery(let d) = event { print("event: \(d.channel) \(d.deviceId ?? "-") → \(d.state.rawValue)") }
        }
    }

    let request = HeraldNotification(
        type: "permission-request", title: "Permission Request", body: "Claude Bash: rm -rf build",
        data: ["sessionId": "5f0c", "requestId": "r-17"],
        actions: [
            NotificationAction(id: "approve", title: "Allow"),
            NotificationAction(id: "deny", title: "Deny", destructive: true),
        ])
    let report = try await router.send(request)
    print("report: \(report.json.canonicalString)")

    // Here a real hub would wait for a Telegram button or a tap; we answer it ourselves.
    Task {
        try await Task.sleep(for: .milliseconds(200))
        try router.recordEvent(ChannelEvent(notificationId: request.id, kind: .action, actionId: "approve"))
    }
    if let answer = try await router.waitForAction(notificationID: request.id, timeout: .seconds(5)) {
        print("the person chose: \(answer.actionId ?? "?")")
    }
    watcher.cancel()
    await router.shutdown()
    removeStore()
} catch {
    print("embedded hub failed: \(error)")
    removeStore()
    exit(1)
}
