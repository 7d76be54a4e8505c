/// Writes one flat JSON object straight into UTF-8 bytes, its members in the order they are added:
/// for hot paths whose keys are fixed (a report line, an event-log entry), where building a
/// ``JSONValue`` tree and sorting its keys costs more than the text itself.
///
/// Add the members in canonical order (keys sorted by UTF-16 code units, as
/// ``JSONValue/canonicalString`` sorts them) and the bytes are the canonical ones: strings are
/// escaped and integers written exactly as ``JSONValue/canonicalBytes`` writes them. A debug build
/// checks the order.
public struct JSONObjectWriter: Sendable {
    private var out: [UInt8]
    private var lastKey: String?

    /// An empty object, with room for `capacity` bytes.
    public init(capacity: Int = 128) {
        out = []
        out.reserveCapacity(capacity)
        out.append(UInt8(ascii: "{"))
    }

    /// Adds `"key":"value"`; nothing when `value` is nil.
    public mutating func add(_ key: String, _ value: String?) {
        guard let value else { return }
        self.key(key)
        JSONWriter.writeString(value, into: &out)
    }

    /// Adds `"key":value` as a JSON integer; nothing when `value` is nil.
    public mutating func add(_ key: String, _ value: Int?) {
        guard let value else { return }
        self.key(key)
        out.append(contentsOf: String(value).utf8)
    }

    /// Adds `"key":true` or `"key":false`; nothing when `value` is nil.
    public mutating func add(_ key: String, _ value: Bool?) {
        guard let value else { return }
        self.key(key)
        out.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// The object's bytes, closed.
    public var bytes: [UInt8] { out + [UInt8(ascii: "}")] }

    /// The object's text, closed.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Appends the object's bytes, closed, to `buffer`.
    public func write(into buffer: inout [UInt8]) {
        buffer.append(contentsOf: out)
        buffer.append(UInt8(ascii: "}"))
    }

    private mutating func key(_ key: String) {
        assert(lastKey.map { JSONWriter.utf16Precedes($0, key) } ?? true, "JSON keys out of canonical order: \(key)")
        lastKey = key
        if out.count > 1 { out.append(UInt8(ascii: ",")) }
        JSONWriter.writeString(key, into: &out)
        out.append(UInt8(ascii: ":"))
    }
}
