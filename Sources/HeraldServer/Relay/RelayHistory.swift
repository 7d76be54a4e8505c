import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldSync
import Router

/// The relay history of one `herald serve` process (docs/relay-server.md, "History and metrics"):
/// each answered relay request becomes a ``RelayRequestRecord`` (no body, no device or bearer token,
/// no address in clear), buffered here and written to the store in batches, so a busy relay costs one
/// store transaction per ``batch`` requests rather than one each. A batch goes out when it is full
/// or its oldest record is ``maxDelay`` seconds old (on the next request), and before the console
/// reads. The store keeps the newest ``keep`` records of every process on it.
public final class RelayHistory: Sendable {
    /// Records per store write.
    static let batch = 32
    /// Seconds a record may wait for its batch while requests keep coming.
    static let maxDelay = 1.0
    /// Records the store keeps.
    public static let keep = 10_000

    private let pending = Locked<(records: [RelayRequestRecord], since: Date?)>(([], nil))

    /// Creates an empty buffer.
    public init() {}

    /// Who called, as recorded: the bearer token's name, or the first 16 hex digits of the SHA-256
    /// of the client address.
    static func caller(tokenName: String?, address: String) -> String {
        if let tokenName { return "token:" + tokenName }
        let hash = Hex.encode(SHA256.hash(Array(address.utf8)).prefix(8))
        return "address:" + hash
    }

    /// Adds a record; writes the buffer to `store` when it is full or old enough.
    func append(_ record: RelayRequestRecord, store: any HeraldStore, logger: ChannelLogger) {
        let due: [RelayRequestRecord] = pending.withLock { p in
            p.records.append(record)
            let since = p.since ?? record.at
            p.since = since
            guard p.records.count >= Self.batch || record.at.timeIntervalSince(since) >= Self.maxDelay else {
                return []
            }
            defer { p = ([], nil) }
            return p.records
        }
        write(due, store: store, logger: logger)
    }

    /// Writes whatever is buffered (before the console reads, and when the server stops).
    public func flush(store: any HeraldStore, logger: ChannelLogger) {
        let due = pending.withLock { p in
            defer { p = ([], nil) }
            return p.records
        }
        write(due, store: store, logger: logger)
    }

    private func write(_ records: [RelayRequestRecord], store: any HeraldStore, logger: ChannelLogger) {
        guard !records.isEmpty else { return }
        do {
            try store.recordRelayRequests(records, keep: Self.keep)
        } catch {
            // History is a record, not the answer: a failing store drops the batch, said once per batch.
            logger.warning("relay history not written", ["records": String(records.count), "error": "\(error)"])
        }
    }
}
