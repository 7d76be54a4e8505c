import ChannelAPI
import HeraldCrypto

/// The stored form of a ``PulseLedger`` (pure), read and rewritten on every push, so it is cheap
/// to parse and small: the version byte `1`, then LEB128 varints (signed ones zig-zag encoded):
///
/// - the seen requestIds: a count, then each as its 8-byte key (big-endian) and its seconds as the
///   difference from the previous one's;
/// - the sends and the starts of the hour: a count each, then each time (ms) as the difference
///   from the previous one;
/// - the refs: a count, then each as its name (length, UTF-8), a byte of flags saying which of
///   token, starting, updated, started and alerted follow (and whether the token is lower-case hex,
///   kept as its bytes), the revision, the last change (ms), the optional times (ms) and the token
///   (length, then its bytes or its UTF-8).
///
/// A ledger of the bench's shape (130 requestIds, 16 refs) is about 2.4 kB, inside one SQLite page.
///
/// Ledgers written as JSON documents (before this form) are still read.
enum PulseLedgerCoding {
    static let version: UInt8 = 1

    static func encode(_ l: PulseLedger) -> [UInt8] {
        var w = Writer()
        w.out.reserveCapacity(8 + l.seen.count * 10 + (l.sends.count + l.starts.count) * 3 + l.refs.count * 80)
        w.out.append(version)
        w.unsigned(UInt64(l.seen.count))
        var previous: Int64 = 0
        for s in l.seen {
            w.fixed(s.key)
            w.signed(s.seconds &- previous)
            previous = s.seconds
        }
        for times in [l.sends, l.starts] {
            w.unsigned(UInt64(times.count))
            previous = 0
            for t in times {
                w.signed(t &- previous)
                previous = t
            }
        }
        w.unsigned(UInt64(l.refs.count))
        for (ref, a) in l.refs {
            w.text(ref)
            let optionals = [a.starting, a.updated, a.started, a.alerted]
            var flags: UInt8 = a.storedToken == nil ? 0 : 1
            for (i, v) in optionals.enumerated() where v != nil { flags |= 2 << i }
            if case .hex = a.storedToken { flags |= 0x20 }
            w.out.append(flags)
            w.signed(a.revision)
            w.signed(a.touched)
            for v in optionals { if let v { w.signed(v) } }
            switch a.storedToken {
            case .hex(let raw):
                w.unsigned(UInt64(raw.count))
                w.out += raw
            case .text(let t): w.text(t)
            case nil: break
            }
        }
        return w.out
    }

    /// The ledger in `bytes`; an empty one when there is none or it cannot be read.
    static func decode(_ bytes: [UInt8]?) -> PulseLedger {
        guard let bytes, let first = bytes.first else { return PulseLedger() }
        if first == UInt8(ascii: "{") { return legacy(bytes) }
        guard first == version else { return PulseLedger() }
        var r = Reader(bytes: bytes, at: 1)
        return read(&r) ?? PulseLedger()
    }

    private static func read(_ r: inout Reader) -> PulseLedger? {
        var l = PulseLedger()
        guard let seen = r.count(9) else { return nil }
        l.seen.reserveCapacity(seen + 1)
        var previous: Int64 = 0
        for _ in 0..<seen {
            guard let key = r.fixed(), let d = r.signed() else { return nil }
            previous &+= d
            l.seen.append(PulseLedger.Seen(key: key, seconds: previous))
        }
        for i in 0..<2 {
            guard let n = r.count(1) else { return nil }
            var times: [Int64] = []
            times.reserveCapacity(n + 1)
            previous = 0
            for _ in 0..<n {
                guard let d = r.signed() else { return nil }
                previous &+= d
                times.append(previous)
            }
            if i == 0 { l.sends = times } else { l.starts = times }
        }
        guard let refs = r.count(4) else { return nil }
        l.refs.reserveCapacity(refs + 1)
        for _ in 0..<refs {
            guard let ref = r.text(), let flags = r.byte(), let revision = r.signed(), let touched = r.signed()
            else { return nil }
            var a = PulseLedger.Activity(revision: revision, touched: touched)
            var optionals: [Int64?] = [nil, nil, nil, nil]
            for i in 0..<4 where flags & (2 << i) != 0 {
                guard let v = r.signed() else { return nil }
                optionals[i] = v
            }
            (a.starting, a.updated, a.started, a.alerted) = (optionals[0], optionals[1], optionals[2], optionals[3])
            if flags & 1 != 0 {
                if flags & 0x20 != 0 {
                    guard let raw = r.raw() else { return nil }
                    a.storedToken = .hex(raw)
                } else {
                    guard let t = r.text() else { return nil }
                    a.storedToken = .text(t)
                }
            }
            l.refs[ref] = a
        }
        return l
    }

    /// A ledger stored as a JSON document (requestIds in clear, refs by name).
    private static func legacy(_ bytes: [UInt8]) -> PulseLedger {
        var l = PulseLedger()
        guard let o = (try? JSONValue.parse(bytes))?.objectValue else { return l }
        func int(_ v: JSONValue?) -> Int64? { v?.intValue.map(Int64.init) }
        for (k, v) in o["seen"]?.objectValue ?? [:] { l.seen.append(PulseLedger.Seen(k, seconds: int(v) ?? 0)) }
        l.seen.sort { $0.seconds < $1.seconds }
        l.sends = (o["sends"]?.arrayValue ?? []).compactMap(int)
        l.starts = (o["starts"]?.arrayValue ?? []).compactMap(int)
        for (ref, v) in o["refs"]?.objectValue ?? [:] {
            guard let a = v.objectValue else { continue }
            l.refs[ref] = PulseLedger.Activity(
                revision: int(a["rev"]) ?? -1, token: a["tok"]?.stringValue, starting: int(a["pend"]),
                updated: int(a["u"]), started: int(a["s"]), alerted: int(a["a"]), touched: int(a["t"]) ?? 0)
        }
        return l
    }

    struct Writer {
        var out: [UInt8] = []

        mutating func unsigned(_ v: UInt64) {
            var v = v
            while v >= 0x80 {
                out.append(UInt8(truncatingIfNeeded: v) | 0x80)
                v >>= 7
            }
            out.append(UInt8(v))
        }

        mutating func signed(_ v: Int64) { unsigned(UInt64(bitPattern: (v << 1) ^ (v >> 63))) }

        mutating func fixed(_ v: UInt64) {
            for shift in stride(from: 56, through: 0, by: -8) {
                out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift)))
            }
        }

        mutating func text(_ s: String) {
            unsigned(UInt64(s.utf8.count))
            out += s.utf8
        }
    }

    struct Reader {
        let bytes: [UInt8]
        var at: Int

        mutating func byte() -> UInt8? {
            guard at < bytes.count else { return nil }
            defer { at += 1 }
            return bytes[at]
        }

        mutating func unsigned() -> UInt64? {
            var v: UInt64 = 0
            var shift: UInt64 = 0
            while shift < 64, let b = byte() {
                v |= UInt64(b & 0x7F) << shift
                if b < 0x80 { return v }
                shift += 7
            }
            return nil
        }

        mutating func signed() -> Int64? {
            guard let u = unsigned() else { return nil }
            return Int64(bitPattern: u >> 1) ^ -Int64(bitPattern: u & 1)
        }

        /// A count of items at least `size` bytes each, when the rest of the bytes can hold them.
        mutating func count(_ size: Int) -> Int? {
            guard let n = unsigned(), n <= UInt64(bytes.count - at) / UInt64(size) else { return nil }
            return Int(n)
        }

        mutating func fixed() -> UInt64? {
            guard bytes.count - at >= 8 else { return nil }
            var v: UInt64 = 0
            for i in at..<at + 8 { v = v << 8 | UInt64(bytes[i]) }
            at += 8
            return v
        }

        /// Bytes, length first.
        mutating func raw() -> [UInt8]? {
            guard let n = count(1) else { return nil }
            defer { at += n }
            return Array(bytes[at..<at + n])
        }

        mutating func text() -> String? {
            guard let n = count(1) else { return nil }
            defer { at += n }
            return String(decoding: bytes[at..<at + n], as: UTF8.self)
        }
    }
}

extension PulseLedger {
    /// The ledger stored as `bytes` (empty when nil or unreadable).
    init(_ bytes: [UInt8]?) { self = PulseLedgerCoding.decode(bytes) }

    /// The stored form.
    var bytes: [UInt8] { PulseLedgerCoding.encode(self) }
}
