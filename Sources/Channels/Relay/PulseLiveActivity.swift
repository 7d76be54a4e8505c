import ChannelAPI
import ChannelSupport
import Foundation

/// A Live Activity push for Pulse Relay, validated before anything is sent (pure). The rules are
/// those of the Pulse Relay site integration guide (sections 三 and 四).
///
/// From `notification.liveActivity`: `ref` (1–64 of `[A-Za-z0-9._-]`, required), `event`
/// (start | update | end, required), `contentState` (required), `alert` (`{body}`, body 1–60
/// characters; an APNs-style `title` or `sound` is accepted and not sent, because the relay always
/// titles the alert with the site name), `timestamp`, `staleDate` (unix seconds), `dismissalDate`
/// (unix seconds, `end` only) and `relevanceScore` (number). `liveActivity.revision` is accepted as
/// an alias of `contentState.revision`.
///
/// `contentState`: the four fields every template needs, `title` (required, ≤ 60 characters),
/// `summary` (≤ 120, may be empty; sent as `""` when absent), `status` (running | waiting | done |
/// error | thinking, required) and `revision` (a non-negative integer; defaults to the clock in
/// milliseconds and is always raised above the last one for the ref, then sent inside
/// `contentState`); `template` (status | progress | steps | countdown; default status) and only
/// that template's fields: progress: `progress` 0–1, optional `endsAt`; steps: `step` ≥ 1 with
/// `steps` (1–8 names of ≤ 16 characters) or `stepCount` (1–8); countdown: `endsAt`, optional
/// `startsAt`. `site`, `agent` and `approvalId` are accepted and not sent (the relay sets or ignores
/// them). `start` always carries an alert (from the notification's body when absent).
struct PulseLiveActivity: Sendable, Equatable {
    let ref: String
    let event: String
    /// The body without the alert and without `contentState.revision` (both added at send time).
    let fields: [String: JSONValue]
    /// The alert (`{body}`), if any (dropped by the alert limit on update/end).
    let alert: JSONValue?
    /// The hub's own revision (`contentState.revision`, or its alias `liveActivity.revision`), if given.
    let requestedRevision: Int64?

    struct Invalid: Error, Equatable {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// The fields every template has.
    static let commonStateKeys: Set<String> = ["template", "title", "summary", "status", "revision"]
    /// Each template's own fields; a field of another template is refused.
    static let templateKeys: [String: Set<String>] = [
        "status": [], "progress": ["progress", "endsAt"], "steps": ["step", "steps", "stepCount"],
        "countdown": ["endsAt", "startsAt"],
    ]
    /// Fields the relay fills in or ignores (guide, 四, 通用说明): accepted and not sent.
    static let ignoredStateKeys: Set<String> = ["site", "agent", "approvalId"]
    static let statuses: Set<String> = ["running", "waiting", "done", "error", "thinking"]
    /// Unix seconds below this bound (year 5138); a larger value is probably milliseconds.
    static let secondsBound = LiveActivityFields.secondsBound

    /// Whether `ref` is 1–64 characters of `[A-Za-z0-9._-]`.
    static func isValidRef(_ ref: String) -> Bool {
        !ref.isEmpty && ref.utf8.count <= 64
            && ref.unicodeScalars.allSatisfy {
                $0.isASCII
                    && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0))
            }
    }

    init(_ notification: HeraldNotification, now: Date) throws(Invalid) {
        guard let la = notification.liveActivity else {
            throw Invalid("the pulse relay only sends Live Activities: the notification has no liveActivity")
        }
        let common: LiveActivityFields
        do {
            common = try LiveActivityFields(la, service: "Pulse")
        } catch {
            throw Invalid(error.reason)
        }
        guard let ref = common.ref, Self.isValidRef(ref) else {
            throw Invalid("liveActivity.ref is required: 1-64 characters of A-Z a-z 0-9 . _ -")
        }
        let event = common.event
        let state = try Self.validateState(common.contentState)
        let revision = try Self.revision(la)
        var fields: [String: JSONValue] = [
            "ref": .string(ref), "event": .string(event), "contentState": .object(state),
            "timestamp": .number(Double(common.timestamp ?? now.secondsSince1970)),
        ]
        if let s = common.staleDate { fields["staleDate"] = .number(Double(s)) }
        if let d = common.dismissalDate {
            guard event == "end" else { throw Invalid("liveActivity.dismissalDate is only sent with event end") }
            fields["dismissalDate"] = .number(Double(d))
        }
        if let r = common.relevanceScore { fields["relevanceScore"] = .number(r) }
        var alert: JSONValue?
        if let a = common.alert {
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
    func asStart(_ notification: HeraldNotification) throws(Invalid) -> PulseLiveActivity {
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

    /// The exact body bytes: the fields with `revision` inside `contentState`, and the alert unless
    /// dropped.
    func body(revision: Int64, dropAlert: Bool) -> [UInt8] {
        var o = fields
        var state = o["contentState"]?.objectValue ?? [:]
        state["revision"] = .number(Double(revision))
        o["contentState"] = .object(state)
        if let alert, !dropAlert { o["alert"] = alert }
        return JSONValue.object(o).canonicalBytes
    }

    /// The hub's revision: `contentState.revision`, or `liveActivity.revision` (alias); both given
    /// must agree.
    static func revision(_ la: [String: JSONValue]) throws(Invalid) -> Int64? {
        func read(_ v: JSONValue?, _ name: String) throws(Invalid) -> Int64? {
            guard let v, !v.isNull else { return nil }
            guard let i = v.intValue, i >= 0 else { throw Invalid("\(name) must be a non-negative integer") }
            return Int64(i)
        }
        let inState = try read(la["contentState"]?["revision"], "liveActivity.contentState.revision")
        let alias = try read(la["revision"], "liveActivity.revision")
        if let inState, let alias, inState != alias {
            throw Invalid("liveActivity.revision and liveActivity.contentState.revision differ; give one")
        }
        return inState ?? alias
    }

    /// The alert to send: `{body}` only (the relay titles it with the site name).
    static func validateAlert(_ a: JSONValue) throws(Invalid) -> JSONValue {
        guard let o = a.objectValue else { throw Invalid("liveActivity.alert must be an object {body}") }
        for key in o.keys.sorted() where !["title", "body", "sound"].contains(key) {
            throw Invalid("liveActivity.alert.\(key) is not allowed (body; title and sound are not sent)")
        }
        guard let body = o["body"]?.stringValue, !body.isEmpty else {
            throw Invalid("liveActivity.alert.body is required (a string)")
        }
        guard body.count <= 60 else { throw Invalid("liveActivity.alert.body is longer than 60 characters") }
        return ["body": .string(body)]
    }

    /// A `start` alert from the notification's body (else the summary or title), cut to 60 characters.
    static func fallbackAlert(_ n: HeraldNotification, state: [String: JSONValue]) throws(Invalid) -> JSONValue {
        let candidates = [n.body, state["summary"]?.stringValue, state["title"]?.stringValue, n.title]
        guard let body = candidates.compactMap({ $0 }).first(where: { !$0.isEmpty }) else {
            throw Invalid("event start needs liveActivity.alert (or a notification body)")
        }
        return ["body": .string(String(body.prefix(60)))]
    }

    /// Checks `s` and returns the `contentState` to send (without `revision`, which is added at send
    /// time): `summary` defaults to `""`, the ignored fields are removed.
    static func validateState(_ s: [String: JSONValue]) throws(Invalid) -> [String: JSONValue] {
        let given = s["template"].flatMap { $0.isNull ? nil : $0 } ?? "status"
        guard let template = given.stringValue, let own = templateKeys[template] else {
            throw Invalid("liveActivity.contentState.template must be status, progress, steps or countdown")
        }
        for key in s.keys.sorted()
        where !commonStateKeys.contains(key) && !own.contains(key) && !ignoredStateKeys.contains(key) {
            if templateKeys.values.contains(where: { $0.contains(key) }) {
                throw Invalid("liveActivity.contentState.\(key) is not a field of template \(template)")
            }
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
        func seconds(_ key: String) throws(Invalid) -> Int? {
            guard let i = try int(key) else { return nil }
            guard i >= 0, i < secondsBound else {
                throw Invalid("liveActivity.contentState.\(key) must be unix seconds")
            }
            return i
        }
        try text("title", max: 60, required: true)
        try text("summary", max: 120, required: false)
        guard let status = s["status"]?.stringValue, statuses.contains(status) else {
            throw Invalid("liveActivity.contentState.status must be one of running, waiting, done, error, thinking")
        }
        switch template {
        case "progress":
            guard let p = s["progress"]?.numberValue, p >= 0, p <= 1 else {
                throw Invalid("liveActivity.contentState.progress must be a number from 0 to 1")
            }
            _ = try seconds("endsAt")
        case "steps":
            guard let step = try int("step"), step >= 1 else {
                throw Invalid("liveActivity.contentState.step must be an integer of at least 1")
            }
            let count: Int
            if let names = s["steps"], !names.isNull {
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
            guard let e = try seconds("endsAt") else {
                throw Invalid("template countdown needs liveActivity.contentState.endsAt (unix seconds)")
            }
            if let st = try seconds("startsAt"), st > e {
                throw Invalid("liveActivity.contentState.startsAt must be unix seconds before endsAt")
            }
        default:
            break
        }
        var out = s.filter { !ignoredStateKeys.contains($0.key) && !$0.value.isNull }
        out.removeValue(forKey: "revision")
        if out["summary"] == nil { out["summary"] = "" }
        return out
    }
}
