import ChannelAPI
import Foundation
import HeraldSync

/// `type: log`: a sink that writes one JSON line per notification to a file or stdout.
///
/// The file is opened once in append mode and kept open. At most once a second the channel checks
/// that `path` still names the file it holds; when the file was moved away or deleted (log rotation),
/// the next line goes to a new file at `path`. A failed write closes the file, so the next delivery
/// opens it again.
///
/// ```yaml
/// console:
///   type: log
///   path: ./deliveries.jsonl   # "-" (the default) for stdout
/// ```
public final class LogChannel: Channel {
    /// The output path, or "-" for stdout.
    public let path: String
    let clock: any HeraldClock
    let lock = Locked<Void>(())
    /// How often (wall time) the open file is checked against `path` for rotation.
    let rotationCheck: Duration
    let file = Locked<OpenLogFile?>(nil)

    /// The factory registered under `log`.
    public static let factory = ChannelFactory(type: "log", defaultPlatforms: []) {
        config, context throws(ConfigError) in
        LogChannel(path: try config.path("path") ?? "-", clock: context.clock)
    }

    /// Creates a log channel.
    public convenience init(path: String, clock: any HeraldClock = SystemClock()) {
        self.init(path: path, clock: clock, rotationCheck: .seconds(1))
    }

    /// Creates a log channel that checks its file against `path` every `rotationCheck`.
    init(path: String, clock: any HeraldClock, rotationCheck: Duration) {
        self.path = path
        self.clock = clock
        self.rotationCheck = rotationCheck
    }

    deinit {
        if let open = file.withLock({ $0 }) { close(open.descriptor) }
    }

    /// The line written for a notification: its contract JSON plus `deliveredAt`.
    public static func line(for notification: HeraldNotification, at date: Date) -> String {
        String(decoding: lineBytes(for: notification, at: date), as: UTF8.self)
    }

    /// ``line(for:at:)`` as the UTF-8 bytes written (no text or `Data` copy per delivery).
    static func lineBytes(for notification: HeraldNotification, at date: Date) -> [UInt8] {
        var o = notification.json.objectValue ?? [:]
        // The same text as ISO8601DateFormatter, without building a formatter or a format style per line
        // (the formatter was 10% of herald's CPU under the serve bench, the format style 3% of a drain's).
        o["deliveredAt"] = .string(ISO8601Time.string(date))
        var bytes = JSONValue.object(o).canonicalBytes
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// Appends one line; an I/O failure is a `retry`.
    public func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        let target = request.targets.first ?? DeliveryTarget(device: nil, deliveryId: "")
        let bytes = LogChannel.lineBytes(for: request.notification, at: clock.now())
        if path == "-" {
            lock.withLock { _ in FileHandle.standardOutput.write(Data(bytes)) }
            return [.delivered(target)]
        }
        do {
            try append(bytes)
            return [.delivered(target)]
        } catch {
            let detail = (error as? OpenLogFile.Failure)?.description ?? error.localizedDescription
            return [.retry(target, reason: "cannot write \(path): \(detail)")]
        }
    }

    /// Appends `data` to the kept-open file, opening (or, after rotation, reopening) it first.
    private func append(_ data: [UInt8]) throws {
        try file.withLock { open in
            let now = ContinuousClock.now
            if let current = open, now - current.checkedAt >= rotationCheck {
                if current.isStill(at: path) {
                    open?.checkedAt = now
                } else {
                    close(current.descriptor)
                    open = nil
                }
            }
            let current = try open ?? OpenLogFile(path: path, at: now)
            open = current
            do {
                try current.write(data)
            } catch {
                close(current.descriptor)
                open = nil
                throw error
            }
        }
    }
}

/// The log file a ``LogChannel`` holds open (append mode), with its identity for rotation checks.
struct OpenLogFile {
    let descriptor: Int32
    let device: UInt64
    let inode: UInt64
    var checkedAt: ContinuousClock.Instant

    /// A failed system call, with the text of its errno.
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ what: String) { description = "\(what): \(String(cString: strerror(errno)))" }
    }

    /// Opens (creating it and its folder when missing) `path` for appending.
    init(path: String, at now: ContinuousClock.Instant) throws {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure("open") }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let failure = Failure("fstat")
            close(fd)
            throw failure
        }
        descriptor = fd
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        checkedAt = now
    }

    /// Whether `path` still names this file (not moved away, deleted or replaced).
    func isStill(at path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && UInt64(st.st_dev) == device && UInt64(st.st_ino) == inode
    }

    /// Writes all of `data` (retrying short writes and interrupted calls).
    func write(_ data: [UInt8]) throws {
        try data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            guard let base = raw.baseAddress else { return }
            var done = 0
            while done < raw.count {
                let n = Glibc.write(descriptor, base + done, raw.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw Failure("write")
                }
                done += n
            }
        }
    }
}
