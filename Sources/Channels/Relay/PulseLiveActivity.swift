import ChannelAPI
import Foundation

/// A Live Activity push for Pulse Relay, validated before anything is sent (pure).
///
/// From `notification.liveActivity`: `ref` (1–64 of `[A-Za-z0-9._-]`, required), `event`
/// (start | update | end, required), `contentState` (required), `alert` ({title?, body}),
/// `timestamp`, `staleDate`, `dismissalDate` (unix seconds), `relevanceScore` (number) and
/// `revision` (integer; defaults to the clock in milliseconds, always raised above the last one).
///
/// `contentState`: `template` (status | progress | steps | countdown; default status), `title`
/// (required, ≤ 60 characters), `summary` (≤ 120), `status` (running | waiting | done | error |
/// thinking, required); progress: `progress` 0–1, optional `endsAt`; steps: `step` ≥ 1 with
/// `steps` (1–8 names of ≤ 16 characters) or `stepCount` (1–8); countdown: `endsAt`, optional
/// `startsAt`. `start` always carries an alert (from the notification's title/body when absent).
struct PulseLiveActivity: Sendable, Equatable {
    let ref: String
    let event: String
    /// The body without `revision` (added at send time).
    let fields: [String: JSONValue]
    /// The alert, if any (dropped by the alert limit on update/end).
    let alert: JSONValue?
    /// The hub's own revision, if given.
    let requestedRevision: Int64?

    struct Invalid: Error, Equatable {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    static let knownKeys: Set<String> = [
        "ref", "event", "timestamp", "contentState", "alert", "staleDate", "dismissalDate", "relevanceScore",
        "revision",
    ]
    static let stateKeys: Set<String> = [
        "template", "title", "summary", "status", "progress", "endsAt", "startsAt", "step", "steps", "stepCount",
    ]
    static let statuses: Set<String> = ["running", "waiting", "done", "error", "thinking"]

    /// Whether `ref` is 1–64 characters of `[A-Za-z0-9._-]`.
    static func isValidRef(_ ref: String) -> Bool {
        !ref.isEmpty && ref.utf8.count <= 64
            && ref.unicodeScalars.allSatisfy {
                $0.isASCII
                    && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0))
            }
    }

    init(_ notification: ChannelAPI.Notification, now: Date) throws(Invalid) {
        guard let la = notification.liveActivity else {
            throw Invalid("the pulse relay only sends Live Activities: the notification has no liveActivity")
        }
        for key in la.keys.sorted() where !Self.knownKeys.contains(key) {
            throw Invalid("liveActivity.\(key) is not a Pulse Live Activity field")
        }
        guard let ref = la["ref"]?.stringValue, Self.isValidRef(ref) else {
            throw Invalid("liveActivity.ref is required: 1-64 characters of A-Z a-z 0-9 . _ -")
        }
        guard let event = la["event"]?.stringValue, ["start", "update", "end"].contains(event) else {
            throw Invalid("liveActivity.event is required: start, update or end")
        }
        guard let state = la["contentState"]?.objectValue else {
            throw Invalid("liveActivity.contentState is required and must be an object")
        }
        try Self.validateState(state)

        func seconds(_ key: String) throws(Invalid) -> Int64? {
            guard let v = la[key], !v.isNull else { return nil }
            guard let i = v.intValue, i >= 0, i < 100_000_000_000 else {
                throw Invalid("liveActivity.\(key) must be an integer number of unix seconds")
            }
            return Int64(i)
        }
        var fields: [String: JSONValue] = [
            "ref": .string(ref), "event": .string(event), "contentState": .object(state),
            "timestamp": .number(Double(try seconds("timestamp") ?? now.secondsSince1970)),
        ]
        if let s = try seconds("staleDate") { fields["staleDate"] = .number(Double(s)) }
        if let d = try seconds("dismissalDate") { fields["dismissalDate"] = .number(Double(d)) }
        if let r = la["relevanceScore"], !r.isNull {
            guard let n = r.numberValue, n.isFinite else {
                throw Invalid("liveActivity.relevanceScore must be a number")
            }
            fields["relevanceScore"] = .number(n)
        }
        var revision: Int64?
        if let r = la["revision"], !r.isNull {
            guard let i = r.intValue, i >= 0 else {
                throw Invalid("liveActivity.revision must be a non-negative integer")
            }
            revision = Int64(i)
        }
        var alert: JSONValue?
        if let a = la["alert"], !a.isNull {
            alert = try Self.validateAlert(a)
        } else if event == "start" {
            alert = try Self.fallbackAlert(notification, state: state)
        }
        self.ref = ref
        self.event = event
        self.fields = fields
        self.alert = alert
        self.requestedRevision = revision
    }

    /// The same activity as a `start` (for a 404 "no such activity" answer to an update).
    func asStart(_ notification: ChannelAPI.Notification) throws(Invalid) -> PulseLiveActivity {
        var startAlert = alert
        if startAlert == nil {
            startAlert = try Self.fallbackAlert(notification, state: fields["contentState"]?.objectValue ?? [:])
        }
        var startFields = fields
        startFields["event"] = "start"
        return PulseLiveActivity(
            ref: ref, event: "start", fields: startFields, alert: startAlert, requestedRevision: requestedRevision)
    }

    private init(
        ref: String, event: String, fields: [String: JSONValue], alert: JSONValue?, requestedRevision: Int64?
    ) {
        self.ref = ref
        self.event = event
        self.fields = fields
        self.alert = alert
        self.requestedRevision = requestedRevision
    }

    /// The exact body bytes: the fields plus `revision`, and the alert unless dropped.
    func body(revision: Int64, dropAlert: Bool) -> [UInt8] {
        var o = fields
        o["revision"] = .number(Double(revision))
        if let alert, !dropAlert { o["alert"] = alert }
        return JSONValue.object(o).canonicalBytes
    }

    static func validateAlert(_ a: JSONValue) throws(Invalid) -> JSONValue {
        guard let o = a.objectValue else { throw Invalid("liveActivity.alert must be an object {title?, body}") }
        for key in o.keys.sorted() where !["title", "body"].contains(key) {
            throw Invalid("liveActivity.alert.\(key) is not allowed (title, body)")
        }
        guard let body = o["body"]?.stringValue, !body.isEmpty else {
            throw Invalid("liveActivity.alert.body is required")
        }
        guard body.count <= 60 else { throw Invalid("liveActivity.alert.body is longer than 60 characters") }
        if let t = o["title"], !t.isNull {
            guard let s = t.stringValue, s.count <= 60 else {
                throw Invalid("liveActivity.alert.title must be a string of at most 60 characters")
            }
        }
        return a
    }

    /// A `start` alert from the notification (body cut to 60 characters).
    static func fallbackAlert(_ n: ChannelAPI.Notification, state: [String: JSONValue]) throws(Invalid) -> JSONValue {
        let body = n.body ?? state["summary"]?.stringValue ?? state["title"]?.stringValue
        guard let body, !body.isEmpty else {
            throw Invalid("event start needs liveActivity.alert (or a notification body)")
        }
        var o: [String: JSONValue] = ["body": .string(String(body.prefix(60)))]
        if let t = n.title ?? state["title"]?.stringValue { o["title"] = .string(String(t.prefix(60))) }
        return .object(o)
    }

    static func validateState(_ s: [String: JSONValue]) throws(Invalid) {
        for key in s.keys.sorted() where !stateKeys.contains(key) {
            throw Invalid("liveActivity.contentState.\(key) is not a Pulse content field")
        }
        func text(_ key: String, max: Int, required: Bool) throws(Invalid) {
            guard let v = s[key], !v.isNull else {
                if required { throw Invalid("liveActivity.contentState.\(key) is required") }
                return
            }
            guard let t = v.stringValue else { throw Invalid("liveActivity.contentState.\(key) must be a string") }
            guard t.count <= max else {
                throw Invalid("liveActivity.contentState.\(key) is longer than \(max) characters")
            }
        }
        func int(_ key: String) throws(Invalid) -> Int? {
            guard let v = s[key], !v.isNull else { return nil }
            guard let i = v.intValue else { throw Invalid("liveActivity.contentState.\(key) must be an integer") }
            return i
        }
        try text("title", max: 60, required: true)
        try text("summary", max: 120, required: false)
        guard let status = s["status"]?.stringValue, statuses.contains(status) else {
            throw Invalid("liveActivity.contentState.status must be one of running, waiting, done, error, thinking")
        }
        let template = s["template"]?.stringValue ?? "status"
        switch template {
        case "status":
            break
        case "progress":
            guard let p = s["progress"]?.numberValue, p >= 0, p <= 1 else {
                throw Invalid("liveActivity.contentState.progress must be a number from 0 to 1")
            }
            if let e = try int("endsAt"), e < 0 {
                throw Invalid("liveActivity.contentState.endsAt must be unix seconds")
            }
        case "steps":
            guard let step = try int("step"), step >= 1 else {
                throw Invalid("liveActivity.contentState.step must be an integer of at least 1")
            }
            let count: Int
            if let names = s["steps"] {
                guard let list = names.arrayValue, !list.isEmpty, list.count <= 8 else {
                    throw Invalid("liveActivity.contentState.steps must list 1-8 step names")
                }
                for name in list {
                    guard let t = name.stringValue, !t.isEmpty, t.count <= 16 else {
                        throw Invalid("liveActivity.contentState.steps names must be 1-16 characters")
                    }
                }
                count = list.count
            } else if let c = try int("stepCount") {
                guard (1...8).contains(c) else { throw Invalid("liveActivity.contentState.stepCount must be 1-8") }
                count = c
            } else {
                throw Invalid("template steps needs liveActivity.contentState.steps or stepCount")
            }
            guard step <= count else { throw Invalid("liveActivity.contentState.step is beyond the step count") }
        case "countdown":
            guard let e = try int("endsAt"), e >= 0 else {
                throw Invalid("template countdown needs liveActivity.contentState.endsAt (unix seconds)")
            }
            if let st = try int("startsAt"), st < 0 || st > e {
                throw Invalid("liveActivity.contentState.startsAt must be unix seconds before endsAt")
            }
        default:
            throw Invalid("liveActivity.contentState.template must be status, progress, steps or countdown")
        }
    }
}
