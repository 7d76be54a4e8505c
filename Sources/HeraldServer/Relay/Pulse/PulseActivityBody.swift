import ChannelAPI

/// A site's push body, validated as sections 三 and 四 of the Pulse guide say (pure). Every refusal
/// is 400 with `error`.
///
/// Top level: `ref` (1–64 of `[A-Za-z0-9._-]`), `event` (start | update | end), `timestamp` (unix
/// seconds), `contentState`, optional `alert` (`{body}`, 1–60 characters), `staleDate`,
/// `dismissalDate` (`end` only), `relevanceScore`. `contentState`: `title` (≤ 60 characters),
/// `summary` (≤ 120, may be empty or left out), `status` (running | waiting | done | error |
/// thinking), `revision` (an integer ≥ 0), `template` (status | progress | steps | countdown) and
/// only that template's fields. `site`, `agent` and `approvalId` are the app's and are dropped;
/// any other field is refused.
struct PulseActivityBody: Equatable {
    /// The site's reference of the thing the activity shows.
    var ref: String
    /// `start`, `update` or `end`.
    var event: String
    /// Unix seconds.
    var timestamp: Int64
    /// The content state as validated, without the reserved fields (`site` is added when sending).
    var contentState: [String: JSONValue]
    /// `contentState.revision`.
    var revision: Int64
    /// `alert.body`; on `start` without one, the `title`.
    var alert: String?
    var staleDate: Int64?
    var dismissalDate: Int64?
    var relevanceScore: Double?

    static let topKeys: Set<String> = [
        "ref", "event", "timestamp", "contentState", "alert", "staleDate", "dismissalDate", "relevanceScore",
    ]
    static let commonKeys: Set<String> = ["template", "title", "summary", "status", "revision"]
    /// Fields only the app sets: accepted from a site and dropped (guide, 四, 通用说明).
    static let reservedKeys: Set<String> = ["site", "agent", "approvalId"]
    static let templates: [String: Set<String>] = [
        "status": [], "progress": ["progress", "endsAt"], "steps": ["step", "steps", "stepCount"],
        "countdown": ["startsAt", "endsAt"],
    ]
    static let statuses: Set<String> = ["running", "waiting", "done", "error", "thinking"]
    /// Unix seconds are below this (year 5138): a larger number is milliseconds by mistake.
    static let secondsLimit: Int64 = 100_000_000_000

    /// Whether `ref` is 1–64 characters of `[A-Za-z0-9._-]`.
    static func isValidRef(_ ref: String) -> Bool {
        (1...64).contains(ref.utf8.count)
            && ref.utf8.allSatisfy { PulseSiteRequest.isIdByte($0) || $0 == 46 || $0 == 95 }
    }

    /// Parses and validates a body.
    static func parse(_ bytes: [UInt8]) throws(PulseRefusal) -> PulseActivityBody {
        guard let value = try? JSONValue.parse(bytes), let o = value.objectValue else {
            throw .bad("the body must be a JSON object", code: "invalid_json")
        }
        if o.keys.contains(where: { !topKeys.contains($0) }),
            let extra = o.keys.sorted().first(where: { !topKeys.contains($0) })
        {
            throw .bad("\(extra) is not a field of a push (contentState holds the revision and the template)")
        }
        guard let ref = o["ref"]?.stringValue, isValidRef(ref) else {
            throw .bad("ref must be 1-64 characters of A-Z a-z 0-9 . _ -")
        }
        guard let event = o["event"]?.stringValue, ["start", "update", "end"].contains(event) else {
            throw .bad("event must be start, update or end")
        }
        guard let timestamp = try seconds(o["timestamp"], "timestamp") else {
            throw .bad("timestamp is required (unix seconds)")
        }
        guard let stateObject = o["contentState"]?.objectValue else { throw .bad("contentState must be an object") }
        let (state, revision) = try contentState(stateObject)
        var body = PulseActivityBody(
            ref: ref, event: event, timestamp: timestamp, contentState: state, revision: revision)
        switch o["alert"] {
        case nil, .null?: break
        case .object(let a)?:
            if let extra = a.keys.sorted().first(where: { $0 != "body" }) {
                throw .bad("alert.\(extra) is not allowed: an alert is {body}, titled with the site's name")
            }
            guard let text = a["body"]?.stringValue, !text.isEmpty, text.count <= 60 else {
                throw .bad("alert.body must be 1-60 characters")
            }
            body.alert = text
        default: throw .bad("alert must be an object {body}")
        }
        body.staleDate = try seconds(o["staleDate"], "staleDate")
        body.dismissalDate = try seconds(o["dismissalDate"], "dismissalDate")
        if body.dismissalDate != nil, event != "end" { throw .bad("dismissalDate is only allowed with event end") }
        switch o["relevanceScore"] {
        case nil, .null?: break
        case .number(let r)? where r.isFinite: body.relevanceScore = r
        default: throw .bad("relevanceScore must be a number")
        }
        if event == "start", body.alert == nil {
            let title = state["title"]?.stringValue ?? ""
            guard !title.isEmpty else { throw .bad("start needs alert.body (or a title to use as the alert)") }
            body.alert = title
        }
        return body
    }

    /// Unix seconds, or nil when absent.
    static func seconds(_ v: JSONValue?, _ name: String) throws(PulseRefusal) -> Int64? {
        guard let v, !v.isNull else { return nil }
        guard let i = v.intValue, i >= 0, Int64(i) < secondsLimit else { throw .bad("\(name) must be unix seconds") }
        return Int64(i)
    }

    /// The validated content state (reserved fields dropped, `summary` defaulting to `""`) and its revision.
    static func contentState(_ s: [String: JSONValue]) throws(PulseRefusal) -> ([String: JSONValue], Int64) {
        let template = s["template"].flatMap { $0.isNull ? nil : $0 }?.stringValue ?? "status"
        guard let own = templates[template], s["template"].map({ $0.isNull || $0.stringValue != nil }) ?? true else {
            throw .bad("contentState.template must be status, progress, steps or countdown")
        }
        func unknown(_ key: String) -> Bool {
            !commonKeys.contains(key) && !own.contains(key) && !reservedKeys.contains(key)
        }
        if s.keys.contains(where: unknown), let key = s.keys.sorted().first(where: unknown) {
            throw .bad("contentState.\(key) is not a field of template \(template)")
        }
        guard s["title"]?.stringValue.map({ $0.count <= 60 }) == true else {
            throw .bad("contentState.title must be a string of at most 60 characters")
        }
        switch s["summary"] {
        case nil, .null?: break
        case .string(let t)? where t.count <= 120: break
        default: throw .bad("contentState.summary must be a string of at most 120 characters")
        }
        guard let status = s["status"]?.stringValue, statuses.contains(status) else {
            throw .bad("contentState.status must be running, waiting, done, error or thinking")
        }
        guard let r = s["revision"]?.intValue, r >= 0 else {
            throw .bad("contentState.revision must be an integer of at least 0 (milliseconds are a good choice)")
        }
        try templateFields(template, s)
        var out = s.filter { !reservedKeys.contains($0.key) && !$0.value.isNull }
        if out["summary"] == nil { out["summary"] = "" }
        return (out, Int64(r))
    }

    /// The rules of each template's own fields.
    static func templateFields(_ template: String, _ s: [String: JSONValue]) throws(PulseRefusal) {
        func whole(_ key: String) throws(PulseRefusal) -> Int? {
            guard let v = s[key], !v.isNull else { return nil }
            guard let i = v.intValue else { throw .bad("contentState.\(key) must be an integer") }
            return i
        }
        switch template {
        case "progress":
            guard let p = s["progress"]?.numberValue, p >= 0, p <= 1 else {
                throw .bad("contentState.progress must be a number from 0 to 1")
            }
            _ = try seconds(s["endsAt"], "contentState.endsAt")
        case "steps":
            guard let step = try whole("step"), step >= 1 else { throw .bad("contentState.step must be 1 or more") }
            var count: Int
            if let names = s["steps"], !names.isNull {
                guard let list = names.arrayValue, (1...8).contains(list.count) else {
                    throw .bad("contentState.steps must be 1-8 step names")
                }
                for n in list {
                    guard let t = n.stringValue, !t.isEmpty, t.count <= 16 else {
                        throw .bad("contentState.steps: each name must be 1-16 characters")
                    }
                }
                count = list.count
                if let c = try whole("stepCount"), c != count {
                    throw .bad("contentState.stepCount must equal the number of steps")
                }
            } else {
                guard let c = try whole("stepCount"), (1...8).contains(c) else {
                    throw .bad("template steps needs contentState.steps (1-8 names) or stepCount (1-8)")
                }
                count = c
            }
            guard step <= count else { throw .bad("contentState.step is beyond the number of steps") }
        case "countdown":
            guard let ends = try seconds(s["endsAt"], "contentState.endsAt") else {
                throw .bad("template countdown needs contentState.endsAt (unix seconds)")
            }
            if let starts = try seconds(s["startsAt"], "contentState.startsAt"), starts > ends {
                throw .bad("contentState.startsAt must not be after endsAt")
            }
        default:
            break
        }
    }
}
