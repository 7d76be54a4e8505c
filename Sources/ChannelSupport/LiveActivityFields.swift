import ChannelAPI

/// The fields of a notification's `liveActivity` object that every Live Activity channel reads
/// (APNs, the Pulse relay), checked once here (pure).
///
/// `event` (start | update | end, required), `contentState` (object, required), `timestamp`,
/// `staleDate`, `dismissalDate` (unix seconds), `relevanceScore` (a finite number), `alert` (kept
/// as given; its shape is the channel's), `ref` (a string) and `revision` (a non-negative integer).
/// A key outside these and the channel's `extraKeys` is refused. What a field means on the wire,
/// and any stricter rule (Pulse's `ref` pattern, `dismissalDate` only with `end`), is the channel's.
public struct LiveActivityFields: Sendable, Equatable {
    /// Why a `liveActivity` object is refused.
    public struct Invalid: Error, Equatable, Sendable {
        /// The reason, naming the field.
        public let reason: String
        /// Creates an error.
        public init(_ reason: String) { self.reason = reason }
    }

    /// The fields read here.
    public static let commonKeys: Set<String> = [
        "ref", "event", "contentState", "timestamp", "staleDate", "dismissalDate", "relevanceScore", "alert",
        "revision",
    ]
    /// Unix seconds below this bound (year 5138); a larger value is probably milliseconds.
    public static let secondsBound: Int = 100_000_000_000

    /// `start`, `update` or `end`.
    public let event: String
    /// The `contentState` object.
    public let contentState: [String: JSONValue]
    /// `timestamp`, unix seconds.
    public let timestamp: Int64?
    /// `staleDate`, unix seconds.
    public let staleDate: Int64?
    /// `dismissalDate`, unix seconds.
    public let dismissalDate: Int64?
    /// `relevanceScore`.
    public let relevanceScore: Double?
    /// `alert` as given (not null).
    public let alert: JSONValue?
    /// `ref`, the hub's reference for the activity.
    public let ref: String?
    /// `revision` (the alias of `contentState.revision` some relays use).
    public let revision: Int64?

    /// Checks `la`. `extraKeys` are the channel's own fields (accepted here, read by the channel);
    /// `service` names the channel in the unknown-key message ("is not a `service` Live Activity field").
    public init(_ la: [String: JSONValue], extraKeys: Set<String> = [], service: String) throws(Invalid) {
        for key in la.keys.sorted() where !Self.commonKeys.contains(key) && !extraKeys.contains(key) {
            throw Invalid("liveActivity.\(key) is not a \(service) Live Activity field")
        }
        guard let event = la["event"]?.stringValue else {
            throw Invalid("liveActivity.event is required: start, update or end")
        }
        guard ["start", "update", "end"].contains(event) else {
            throw Invalid("liveActivity.event must be start, update or end, not \"\(event)\"")
        }
        guard let state = la["contentState"]?.objectValue else {
            throw Invalid("liveActivity.contentState is required and must be an object")
        }
        func seconds(_ key: String) throws(Invalid) -> Int64? {
            guard let v = la[key], !v.isNull else { return nil }
            guard let i = v.intValue else {
                throw Invalid("liveActivity.\(key) must be an integer number of unix seconds")
            }
            guard i >= 0, i < Self.secondsBound else {
                throw Invalid("liveActivity.\(key) must be unix seconds (a millisecond value was given?)")
            }
            return Int64(i)
        }
        var score: Double?
        if let r = la["relevanceScore"], !r.isNull {
            guard let n = r.numberValue, n.isFinite else {
                throw Invalid("liveActivity.relevanceScore must be a number")
            }
            score = n
        }
        if la["ref"].map({ $0.stringValue == nil && !$0.isNull }) == true {
            throw Invalid("liveActivity.ref must be a string")
        }
        var revision: Int64?
        if let r = la["revision"], !r.isNull {
            guard let i = r.intValue, i >= 0 else {
                throw Invalid("liveActivity.revision must be a non-negative integer")
            }
            revision = Int64(i)
        }
        self.event = event
        self.contentState = state
        self.timestamp = try seconds("timestamp")
        self.staleDate = try seconds("staleDate")
        self.dismissalDate = try seconds("dismissalDate")
        self.relevanceScore = score
        self.alert = la["alert"].flatMap { $0.isNull ? nil : $0 }
        self.ref = la["ref"]?.stringValue
        self.revision = revision
    }
}
