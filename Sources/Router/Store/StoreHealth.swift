import ChannelAPI
import Foundation
import HeraldPostgres
import HeraldSQLite
import HeraldSync

/// Whether the store can be written, as the server last saw it: the last write that failed because
/// the store was unavailable (a full disk, an I/O error, a read-only store, an unreachable
/// database), until a write succeeds again.
///
/// `herald serve` notes every such failure (of a request or of the worker) with
/// ``noteFailure(_:at:)`` and every write request that succeeds with ``noteSuccess()``; `/healthz`
/// answers 503 while a failure is remembered and, at most once per ``probeInterval``, tries a
/// small write itself (``Router/probeStoreWrite()``), so it turns 200 again by itself once writes
/// work, without waiting for a client to write.
public final class StoreHealth: Sendable {
    /// The last unavailability: its reason for clients (no path, host or user) and when it was seen.
    public struct Failure: Sendable, Equatable {
        /// What failed, for an answer: ``StoreHealth/unavailableReason(of:)``.
        public var reason: String
        /// When it was noted.
        public var at: Date
    }

    private struct State {
        var failure: Failure?
        var lastProbe: Date?
    }

    private let state = Locked(State())

    /// The least time between two write probes of `/healthz` (it is unauthenticated: a probe is a
    /// store write, so a client polling it fast must not make the server write fast).
    public static let probeInterval: TimeInterval = 1

    /// A store whose writes have not failed.
    public init() {}

    /// The remembered failure, or nil while writes work.
    public var failure: Failure? { state.withLock { $0.failure } }

    /// Remembers that a write failed because the store is unavailable.
    public func noteFailure(_ reason: String, at: Date) {
        state.withLock { $0.failure = Failure(reason: reason, at: at) }
    }

    /// Forgets the failure: a write succeeded.
    public func noteSuccess() { state.withLock { $0.failure = nil } }

    /// True when a probe may run at `now` (none ran in the last ``probeInterval``); marks one as run.
    func takeProbe(now: Date) -> Bool {
        state.withLock { s in
            if let last = s.lastProbe, now.timeIntervalSince(last) < Self.probeInterval, now >= last { return false }
            s.lastProbe = now
            return true
        }
    }

    /// Why `error` means the store cannot serve now (it may work again without a change to the
    /// request: answer 503 and let the client retry), in words fit for an answer: what failed, never
    /// where (no file path, host, port, user or database name; those stay in the log). Nil for any
    /// other error (a bug, a constraint, bad data: 500).
    public static func unavailableReason(of error: any Error) -> String? {
        switch error {
        case let e as StoreError:
            switch e {
            case .readOnly: return "the store is read-only"
            case .unreachable: return "the store's database cannot be reached"
            case .cannotOpen: return "the store cannot be opened"
            case .writeFailed(_, let detail):
                if detail.contains("no space left on the device") { return "the store's disk is full" }
                return "the store cannot be written"
            default: return nil
            }
        case let e as SQLiteError:
            if e.isDiskFull { return "the store's disk is full" }
            if e.isBusy { return "the store is locked by another process" }
            switch e.primaryCode {
            case 8: return "the store is read-only"  // SQLITE_READONLY
            case 10: return "the store cannot be written (an I/O error)"  // SQLITE_IOERR
            case 14: return "the store cannot be opened"  // SQLITE_CANTOPEN
            case 7: return "the store is out of memory"  // SQLITE_NOMEM
            case 15: return "the store cannot be written (a locking protocol error)"  // SQLITE_PROTOCOL
            default: return nil
            }
        case let e as PostgresError:
            if e.isConnectionFailure { return "the store's database cannot be reached" }
            let state = e.sqlState ?? ""
            if state == "53100" { return "the store's disk is full" }  // disk_full
            if state == "25006" { return "the store is read-only" }  // read_only_sql_transaction
            // 08: connection exception; 53: insufficient resources; 57P: operator intervention
            // (shutdown, cannot connect now); 58: system error (I/O).
            for prefix in ["08", "53", "57P", "58"] where state.hasPrefix(prefix) {
                return "the store's database cannot serve (SQLSTATE \(state))"
            }
            return nil
        default:
            return nil
        }
    }
}
