import ChannelAPI
import HeraldCrypto

/// The relay's record of one site on one phone (pure): the requestIds seen within the replay window,
/// the pushes and starts of the last hour, and per `ref` the last revision, the activity's push token
/// and when it last updated, started and alerted. One compact binary record per (deviceId, sourceId)
/// in the store (``PulseLedgerCoding``), changed inside one store transaction per request, so every
/// `herald serve` on one database enforces one set of limits and one revision order.
struct PulseLedger: Equatable {
    /// One ref's activity.
    struct Activity: Equatable {
        /// The last revision accepted.
        var revision: Int64 = -1
        /// The activity's own push token as stored (lower-case hex as its bytes), reported by the app.
        var storedToken: PulseStoredToken?
        /// The activity's own push token (hex), reported by the app. A push decodes and re-encodes
        /// every ref of its ledger but sends to one: the text is made only when asked for.
        var token: String? {
            get { storedToken?.text }
            set { storedToken = newValue.map(PulseStoredToken.init) }
        }
        /// When a `start` was delivered and the app has not reported the new activity's token yet (ms).
        var starting: Int64?
        /// Last update, start and alert sent (ms).
        var updated: Int64?
        var started: Int64?
        var alerted: Int64?
        /// Last change (ms), for forgetting refs.
        var touched: Int64 = 0

        init(
            revision: Int64 = -1, token: String? = nil, starting: Int64? = nil, updated: Int64? = nil,
            started: Int64? = nil, alerted: Int64? = nil, touched: Int64 = 0
        ) {
            self.revision = revision
            self.storedToken = token.map(PulseStoredToken.init)
            self.starting = starting
            self.updated = updated
            self.started = started
            self.alerted = alerted
            self.touched = touched
        }
    }

    /// A requestId seen within the replay window: the first 8 bytes of its SHA-256 (a false replay
    /// needs a 64-bit collision with one of at most `maxSeen` ids: about 1 in 10^16 per push) and
    /// its signed unix seconds.
    struct Seen: Equatable {
        var key: UInt64
        var seconds: Int64

        init(_ requestId: String, seconds: Int64) {
            let d = SHA256.hash(Array(requestId.utf8))
            var key: UInt64 = 0
            for b in d.prefix(8) { key = key << 8 | UInt64(b) }
            self.init(key: key, seconds: seconds)
        }

        init(key: UInt64, seconds: Int64) {
            self.key = key
            self.seconds = seconds
        }
    }

    /// The requestIds of the replay window, oldest first.
    var seen: [Seen] = []
    /// Accepted pushes and starts of the last hour (ms).
    var sends: [Int64] = []
    var starts: [Int64] = []
    var refs: [String: Activity] = [:]

    init() {}

    /// Whether `requestId` is in the replay window.
    func hasSeen(_ requestId: String) -> Bool {
        let key = Seen(requestId, seconds: 0).key
        return seen.contains { $0.key == key }
    }
}

/// A push token as a ledger keeps it: lower-case hex (what APNs tokens are) as its bytes, half
/// the size and stored without conversion; any other text as it is.
enum PulseStoredToken: Equatable {
    case hex([UInt8])
    case text(String)

    init(_ token: String) {
        self = Hex.decode(token, lowerCaseOnly: true).map(PulseStoredToken.hex) ?? .text(token)
    }

    /// The token as the app reported it.
    var text: String {
        switch self {
        case .hex(let bytes): Hex.encode(bytes)
        case .text(let t): t
        }
    }
}

/// The limits of 「频率和远程开始」 and the replay window, as numbers (the guide's by default).
struct PulseLimits: Equatable {
    /// Pushes per hour per site and phone.
    var pushesPerHour = 600
    /// `start`s per hour per site and phone.
    var startsPerHour = 4
    /// Between two updates of one ref (ms).
    var updateSpacing: Int64 = 1_000
    /// Between two starts of one ref (ms).
    var startSpacing: Int64 = 30_000
    /// Between two alerts on update/end of one ref (ms); closer, the alert is dropped.
    var alertSpacing: Int64 = 30_000
    /// How far `X-Pulse-Auth`'s time may be from the relay's (s).
    var maxSkew: Int64 = 300
    /// How long after a delivered `start` an update waits (429) for the app to report the activity's token (ms).
    var startWait: Int64 = 60_000
    /// requestIds remembered per site and phone; past it 429 until the oldest leaves the window.
    var maxSeen = 2_000
    /// Refs remembered per site and phone (the least recently used beyond it are forgotten).
    var maxRefs = 256
    /// A ref untouched this long is forgotten (ms).
    var refLifetime: Int64 = 86_400_000

    static let hour: Int64 = 3_600_000
}

/// What one push may do, decided over the ledger in the store transaction (pure, time injected).
enum PulseDecision: Equatable {
    /// Send to the activity's token (nil: `start`, to the phone's push-to-start token); `dropAlert`
    /// when the alert limit was hit; `previous` is the revision to restore if delivery fails.
    case send(token: String?, dropAlert: Bool, previous: Int64)
    /// Refused; nothing is sent.
    case refused(PulseRefusal)
}

extension PulseLedger {
    /// Forgets what has left its window at `now` (ms): requestIds signed more than `maxSkew` ago, sends
    /// older than an hour, refs untouched for `refLifetime` and the least recently touched past `maxRefs`.
    mutating func prune(now: Int64, limits: PulseLimits) {
        let oldest = now / 1000 - limits.maxSkew
        seen.removeAll { $0.seconds < oldest }
        sends.removeAll { now - $0 >= PulseLimits.hour }
        starts.removeAll { now - $0 >= PulseLimits.hour }
        if refs.values.contains(where: { now - $0.touched >= limits.refLifetime }) {
            refs = refs.filter { now - $0.value.touched < limits.refLifetime }
        }
        if refs.count > limits.maxRefs {
            let keep = refs.sorted { $0.value.touched > $1.value.touched }.prefix(limits.maxRefs)
            refs = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
        }
    }

    /// Applies one verified push at `now` (ms): the requestId is recorded whatever the outcome; the
    /// revision, the limits' counters and the alert time only when it may be sent. Checks, in order:
    /// replay (409 `replayed`), an activity for update/end (404 `no_activity`, or 429
    /// `activity_starting` while a start waits for its token), the revision (409 `stale_revision`),
    /// then the limits (429 `rate_limited` with `Retry-After`).
    mutating func reserve(
        _ body: PulseActivityBody, request: PulseSiteRequest, now: Int64, limits: PulseLimits
    ) -> PulseDecision {
        prune(now: now, limits: limits)
        let id = Seen(request.requestId, seconds: request.seconds)
        if seen.contains(where: { $0.key == id.key }) {
            return .refused(PulseRefusal(409, "replayed", "this requestId was used already; sign with a new one"))
        }
        if seen.count >= limits.maxSeen, let oldest = seen.lazy.map(\.seconds).min() {
            let wait = Int(oldest + limits.maxSkew - now / 1000) + 1
            return .refused(PulseRefusal(429, "rate_limited", "too many requests", retryAfter: wait))
        }
        seen.append(id)
        var a = refs[body.ref] ?? Activity()
        if body.event != "start", a.token == nil {
            if let s = a.starting, now - s < limits.startWait {
                return .refused(
                    PulseRefusal(
                        429, "activity_starting", "the activity is starting on the phone; retry shortly",
                        retryAfter: Int((s + limits.startWait - now + 999) / 1000)))
            }
            return .refused(PulseRefusal(404, "no_activity", "the phone has no Live Activity for ref \(body.ref)"))
        }
        if body.revision <= a.revision {
            return .refused(
                PulseRefusal(
                    409, "stale_revision",
                    "revision \(body.revision) is not above the last one for ref \(body.ref) (\(a.revision))"))
        }
        func wait(until: Int64, _ what: String) -> PulseDecision {
            .refused(PulseRefusal(429, "rate_limited", what, retryAfter: Int((until - now + 999) / 1000)))
        }
        if sends.count >= limits.pushesPerHour, let first = sends.min() {
            return wait(until: first + PulseLimits.hour, "at most \(limits.pushesPerHour) pushes an hour per site")
        }
        switch body.event {
        case "start":
            if starts.count >= limits.startsPerHour, let first = starts.min() {
                return wait(until: first + PulseLimits.hour, "at most \(limits.startsPerHour) starts an hour per site")
            }
            if let s = a.started, now - s < limits.startSpacing {
                return wait(
                    until: s + limits.startSpacing, "at most one start per ref in \(limits.startSpacing / 1000) s")
            }
        case "update":
            if let u = a.updated, now - u < limits.updateSpacing {
                return wait(until: u + limits.updateSpacing, "at most one update per ref a second")
            }
        default:
            break
        }
        var dropAlert = false
        // Only alerts on update/end count (a start always carries one and is limited on its own).
        if body.alert != nil, body.event != "start" {
            if let last = a.alerted, now - last < limits.alertSpacing {
                dropAlert = true
            } else {
                a.alerted = now
            }
        }
        let previous = a.revision
        a.revision = body.revision
        a.touched = now
        sends.append(now)
        switch body.event {
        case "start":
            starts.append(now)
            a.started = now
        case "update": a.updated = now
        default: break
        }
        refs[body.ref] = a
        return .send(token: body.event == "start" ? nil : a.token, dropAlert: dropAlert, previous: previous)
    }

    /// After delivery: what APNs' answer changes for `ref` at `now` (ms).
    enum Outcome: Equatable {
        /// A start reached the phone: wait for the new activity's token (the old one is forgotten).
        case started
        /// An end reached the phone, or APNs said the activity's token is gone: no activity for the ref.
        case ended
        /// Not delivered: put the revision back to `previous` unless a newer push moved it on.
        case undo(revision: Int64, previous: Int64)
    }

    /// Records a delivery outcome.
    mutating func record(_ outcome: Outcome, ref: String, now: Int64) {
        guard var a = refs[ref] else { return }
        switch outcome {
        case .started:
            a.token = nil
            a.starting = now
        case .ended:
            a.token = nil
            a.starting = nil
        case .undo(let revision, let previous):
            if a.revision == revision { a.revision = previous }
        }
        refs[ref] = a
    }

    /// The app reported the activity's push token for `ref` (nil: it ended or was dismissed).
    mutating func report(token: String?, ref: String, now: Int64) {
        var a = refs[ref] ?? Activity()
        a.token = token
        a.starting = nil
        a.touched = now
        refs[ref] = a
    }
}
