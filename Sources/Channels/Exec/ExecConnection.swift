import ChannelAPI
import Foundation
import HeraldProcess
import HeraldSync

/// What one request to the plugin came to.
enum ExecReply: Sendable {
    /// The plugin answered.
    case answered(ExecAnswer)
    /// No answer within the request's timeout (or the caller was cancelled).
    case timedOut
    /// The plugin ended (or could not be written to) before it answered; the reason says how.
    case ended(String)
    /// Too many batches are in flight already.
    case busy(Int)
}

/// Limits of one exec channel.
struct ExecLimits: Sendable {
    /// The longest stdout line kept (an answer of a large batch), in bytes.
    var maxLine = 8 << 20
    /// The longest stderr line logged, in bytes.
    var maxLogLine = 16 << 10
    /// At most this many `deliver` batches wait for answers at once; more are answered `retry`.
    var maxBatches = 16
    /// How long a batch may wait for its answer.
    var timeout: Duration = .seconds(30)
    /// How long the handshake may take.
    var handshakeTimeout: Duration = .seconds(10)
    /// How long a plugin gets to exit after `shutdown` (and again after `SIGTERM`).
    var grace: Duration = .seconds(2)
    /// How many finished batches' device secrets are still scrubbed from stderr lines (a line may
    /// be read after its batch's answer: they come on different pipes).
    var recentBatches = 8
}

/// One running plugin: writes request lines, matches answer lines to requests by id, logs stderr
/// line by line (scrubbed), and when the plugin ends answers every request in flight `ended`.
final class ExecConnection: Sendable {
    let process: ChildProcess
    private let logger: ChannelLogger
    private let limits: ExecLimits
    private let writer = DispatchQueue(label: "herald.exec.writer")
    private let onEnd: @Sendable (ExecConnection, String) -> Void

    private struct Pending {
        let continuation: CheckedContinuation<ExecReply, Never>
        var timer: Task<Void, Never>?
        let isBatch: Bool
    }
    private struct State {
        var nextId = 1
        var pending: [Int: Pending] = [:]
        var ended: String?
        var batches = 0
        var secrets: [String] = []
        var batchSecrets: [Int: [String]] = [:]
        var recentSecrets: [[String]] = []
    }
    private let state = Locked(State())

    /// Starts reading the plugin's stdout and stderr. `onEnd` is called once, when it has ended
    /// (before the requests in flight are answered).
    init(
        process: ChildProcess, logger: ChannelLogger, limits: ExecLimits,
        onEnd: @escaping @Sendable (ExecConnection, String) -> Void
    ) {
        self.process = process
        self.logger = logger
        self.limits = limits
        self.onEnd = onEnd
        Thread.detachNewThread { [self] in readAnswers() }
        Thread.detachNewThread { [self] in readLog() }
    }

    /// Whether the plugin has ended.
    var ended: String? { state.withLock { $0.ended } }

    /// How many batches wait for answers.
    var batchesInFlight: Int { state.withLock { $0.batches } }

    /// Adds secrets scrubbed from every stderr line (config values, from the handshake on).
    func addSecrets(_ more: [String]) { state.withLock { $0.secrets += more } }

    /// Sends the line `make(id)` builds and waits for its answer, at most `timeout`. A batch
    /// (`secrets` are its devices' secret values, scrubbed from stderr meanwhile) counts against
    /// ``ExecLimits/maxBatches``.
    func request(
        timeout: Duration, batch: Bool = false, secrets: [String] = [], _ make: @Sendable (Int) -> [UInt8]
    ) async -> ExecReply {
        let id: Int
        switch state.withLock({ s -> Result<Int, ExecReplyEarly> in
            if let e = s.ended { return .failure(.ended(e)) }
            if batch && s.batches >= limits.maxBatches { return .failure(.busy(s.batches)) }
            defer { s.nextId += 1 }
            if batch {
                s.batches += 1
                if !secrets.isEmpty { s.batchSecrets[s.nextId] = secrets }
            }
            return .success(s.nextId)
        }) {
        case .success(let n): id = n
        case .failure(.ended(let e)): return .ended(e)
        case .failure(.busy(let n)): return .busy(n)
        }
        let line = make(id)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<ExecReply, Never>) in
                let registered = state.withLock { s -> String? in
                    if let e = s.ended { return e }
                    s.pending[id] = Pending(continuation: c, timer: nil, isBatch: batch)
                    return nil
                }
                if let e = registered {
                    finishBatch(id, batch: batch)
                    c.resume(returning: .ended(e))
                    return
                }
                let timer = Task { [self] in
                    do {
                        try await Task.sleep(for: timeout)
                        resolve(id, .timedOut)
                    } catch {}
                }
                state.withLock { $0.pending[id]?.timer = timer }
                writer.async { [self] in
                    if !process.write(line) { logger.debug("exec plugin: write failed (its stdin is closed)") }
                }
            }
        } onCancel: {
            resolve(id, .timedOut)
        }
    }

    private enum ExecReplyEarly: Error {
        case ended(String)
        case busy(Int)
    }

    /// Answers request `id` with `reply`, unless it was answered already.
    private func resolve(_ id: Int, _ reply: ExecReply) {
        guard let p = state.withLock({ $0.pending.removeValue(forKey: id) }) else { return }
        p.timer?.cancel()
        finishBatch(id, batch: p.isBatch)
        p.continuation.resume(returning: reply)
    }

    private func finishBatch(_ id: Int, batch: Bool) {
        guard batch else { return }
        state.withLock { s in
            s.batches -= 1
            if let secrets = s.batchSecrets.removeValue(forKey: id) {
                s.recentSecrets.append(secrets)
                if s.recentSecrets.count > limits.recentBatches { s.recentSecrets.removeFirst() }
            }
        }
    }

    /// Closes the plugin's stdin after a `shutdown` request; the plugin should then exit.
    func closeInput() { writer.async { [self] in process.closeInput() } }

    // MARK: Reading

    /// Reads `fd` to its end in lines of at most `maxLine` bytes, handing each to `body`, then closes it.
    private func readLines(_ fd: Int32, maxLine: Int, _ body: (ExecLineBuffer.Piece) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var lines = ExecLineBuffer(maxLine: maxLine)
        while case let n = process.read(fd, into: &buffer), n > 0 {
            for piece in lines.append(buffer[0..<n]) { body(piece) }
        }
        if let rest = lines.finish() { body(.line(rest)) }
        process.closeReading(fd)
    }

    private func readAnswers() {
        readLines(process.output, maxLine: limits.maxLine, handle)
        let how = process.end(grace: limits.grace)
        let reason = "exec plugin \(how)"
        let first = state.withLock { s -> Bool in
            defer { if s.ended == nil { s.ended = reason } }
            return s.ended == nil
        }
        guard first else { return }
        onEnd(self, reason)
        let ids = state.withLock { Array($0.pending.keys) }
        for id in ids { resolve(id, .ended(reason)) }
    }

    private func handle(_ piece: ExecLineBuffer.Piece) {
        switch piece {
        case .overlong(let n):
            refuse(
                ExecProtocolError(
                    code: .lineTooLong, message: "a stdout line over \(limits.maxLine) bytes (\(n) so far) dropped"))
        case .line(let bytes):
            guard !bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) else { return }
            switch ExecProtocol.answer(bytes) {
            case .failure(let e): refuse(e)
            case .success(let answer):
                guard state.withLock({ $0.pending[answer.id] != nil }) else {
                    refuse(
                        ExecProtocolError(
                            code: .unknownId,
                            message: "an answer to request \(answer.id), which is not in flight (late or made up)"))
                    return
                }
                resolve(answer.id, .answered(answer))
            }
        }
    }

    /// Logs a refused line (never its text: it may hold secrets).
    func refuse(_ error: ExecProtocolError) {
        logger.warning("exec plugin: line refused: \(error.message)", ["problem": error.code.rawValue])
    }

    private func readLog() { readLines(process.errors, maxLine: limits.maxLogLine, log) }

    private func log(_ piece: ExecLineBuffer.Piece) {
        let secrets = state.withLock { s in s.secrets + s.batchSecrets.values.joined() + s.recentSecrets.joined() }
        let scrubbing = logger.withSecrets(secrets.sorted { $0.utf8.count > $1.utf8.count })
        switch piece {
        case .line(let bytes):
            scrubbing.warning(String(decoding: bytes, as: UTF8.self), ["stream": "stderr"])
        case .overlong:
            scrubbing.warning(
                "exec plugin: a stderr line over \(limits.maxLogLine) bytes dropped", ["stream": "stderr"])
        }
    }
}
