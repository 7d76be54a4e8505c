import ChannelAPI
import Foundation

/// A message between processes sharing a store about local push: a push for the process holding
/// the device's stream, a confirmation for the process waiting for it, or a push's end at the
/// holder (its stream closed, or it holds no stream of the device any more).
public enum LocalRelayMessage: Sendable, Equatable {
    /// `push` for the process `holder`.
    case push(holder: String, LocalPush)
    /// The app of `deviceId` confirmed `notificationId`.
    case confirm(namespace: String, notificationId: String, deviceId: String)
    /// The push `deliveryId` ended at its holder with `outcome`.
    case closed(deliveryId: String, outcome: LocalPushOutcome)

    /// The message as one line of JSON.
    public var json: JSONValue {
        switch self {
        case .push(let holder, let p):
            [
                "t": "push", "holder": .string(holder), "ns": .string(p.namespace), "device": .string(p.deviceId),
                "platform": .string(p.platform), "n": .string(p.notificationId), "delivery": .string(p.deliveryId),
                "payload": p.payload,
            ]
        case .confirm(let ns, let n, let d):
            ["t": "confirm", "ns": .string(ns), "n": .string(n), "device": .string(d)]
        case .closed(let id, let outcome):
            ["t": "closed", "delivery": .string(id), "outcome": .string(outcome.rawValue)]
        }
    }

    /// Reads a message written by ``json``; nil for anything else.
    public init?(json: JSONValue) {
        func s(_ k: String) -> String? { json[k]?.stringValue }
        switch s("t") {
        case "push":
            guard let h = s("holder"), let ns = s("ns"), let d = s("device"), let p = s("platform"), let n = s("n"),
                let id = s("delivery"), let payload = json["payload"]
            else { return nil }
            self = .push(
                holder: h,
                LocalPush(
                    namespace: ns, deviceId: d, platform: p, notificationId: n, deliveryId: id, payload: payload))
        case "confirm":
            guard let ns = s("ns"), let n = s("n"), let d = s("device") else { return nil }
            self = .confirm(namespace: ns, notificationId: n, deviceId: d)
        case "closed":
            guard let id = s("delivery"), let o = s("outcome").flatMap(LocalPushOutcome.init(rawValue:)) else {
                return nil
            }
            self = .closed(deliveryId: id, outcome: o)
        default:
            return nil
        }
    }
}

/// How a ``LocalStreamHub`` reaches the other processes sharing its store (PostgreSQL:
/// `PostgresLocalRelay`, a table of held streams and `LISTEN/NOTIFY`). Its calls block briefly on
/// the database; failures are thrown and the hub treats the device as not connected.
public protocol LocalStreamRelay: Sendable {
    /// This process's name among the holders.
    var holder: String { get }
    /// Notes that this process holds streams of `devices` now (and renews them: a heartbeat).
    func hold(_ devices: [LocalStreamHub.DeviceKey], now: Date) throws
    /// Notes that this process holds no stream of `device` any more.
    func release(_ device: LocalStreamHub.DeviceKey) throws
    /// Another process holding a stream of `device` whose heartbeat is at or after `freshSince`.
    func holder(of device: LocalStreamHub.DeviceKey, freshSince: Date) throws -> String?
    /// Sends `message` to every process.
    func send(_ message: LocalRelayMessage) throws
    /// Waits up to `timeout` for messages (blocking the calling thread); [] when none came.
    func receive(timeout: Duration) throws -> [LocalRelayMessage]
    /// Forgets every stream of this process and stops receiving.
    func close()
}
