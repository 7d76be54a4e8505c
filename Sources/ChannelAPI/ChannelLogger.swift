import Foundation

/// Severity of a log line.
public enum LogLevel: String, Sendable, Comparable, CaseIterable {
    /// Detail for debugging.
    case debug
    /// Normal operation.
    case info
    /// Something an operator should look at.
    case warning
    /// Something is broken (for example rejected credentials).
    case error

    var rank: Int {
        switch self {
        case .debug: 0
        case .info: 1
        case .warning: 2
        case .error: 3
        }
    }

    /// Orders by severity.
    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rank < b.rank }
}

/// One structured log line.
public struct LogRecord: Sendable {
    /// Severity.
    public var level: LogLevel
    /// Who logged it (channel name or `router`).
    public var source: String
    /// The message.
    public var message: String
    /// Structured fields.
    public var fields: [String: String]
    /// When.
    public var time: Date
}

/// Where log records go.
public protocol LogSink: Sendable {
    /// Writes one record.
    func write(_ record: LogRecord)
}

/// Writes JSON lines to standard error at or above a level.
public struct StandardErrorLogSink: LogSink {
    /// The lowest level written.
    public var minimumLevel: LogLevel

    /// Creates the sink.
    public init(minimumLevel: LogLevel = .warning) { self.minimumLevel = minimumLevel }

    /// Writes one JSON line to stderr.
    public func write(_ record: LogRecord) {
        guard record.level >= minimumLevel else { return }
        var o: [String: JSONValue] = [
            "level": .string(record.level.rawValue), "source": .string(record.source),
            "message": .string(record.message), "time": .string(ISO8601DateFormatter().string(from: record.time)),
        ]
        for (k, v) in record.fields where o[k] == nil { o[k] = .string(v) }
        FileHandle.standardError.write(Data((JSONValue.object(o).canonicalString + "\n").utf8))
    }
}

/// A logger lent to a channel. Every message and field passes through redaction: values of fields
/// named like secrets are redacted (a push token or endpoint shortened, anything else in full,
/// ``Redaction/field(_:_:)``), and registered secret strings are scrubbed from text.
public struct ChannelLogger: Sendable {
    /// The logging source name.
    public let source: String
    let sink: any LogSink
    let secrets: [String]
    let clock: any HeraldClock

    /// Creates a logger. `secrets` are strings (keys, bot tokens) that must never appear in output.
    public init(source: String, sink: any LogSink, secrets: [String] = [], clock: any HeraldClock = SystemClock()) {
        self.source = source
        self.sink = sink
        self.secrets = secrets
        self.clock = clock
    }

    /// A logger that also scrubs `more` secrets.
    public func withSecrets(_ more: [String]) -> ChannelLogger {
        ChannelLogger(source: source, sink: sink, secrets: secrets + more, clock: clock)
    }

    /// Logs at `level`.
    public func log(_ level: LogLevel, _ message: String, _ fields: [String: String] = [:]) {
        var clean: [String: String] = [:]
        for (k, v) in fields {
            clean[k] =
                ChannelLogger.secretFieldNames.contains(k.lowercased())
                ? Redaction.field(k.lowercased(), v) : Redaction.scrub(v, secrets: secrets)
        }
        sink.write(
            LogRecord(
                level: level, source: source, message: Redaction.scrub(message, secrets: secrets), fields: clean,
                time: clock.now()))
    }

    /// Logs at debug level.
    public func debug(_ message: String, _ fields: [String: String] = [:]) { log(.debug, message, fields) }
    /// Logs at info level.
    public func info(_ message: String, _ fields: [String: String] = [:]) { log(.info, message, fields) }
    /// Logs at warning level.
    public func warning(_ message: String, _ fields: [String: String] = [:]) { log(.warning, message, fields) }
    /// Logs at error level.
    public func error(_ message: String, _ fields: [String: String] = [:]) { log(.error, message, fields) }

    static let secretFieldNames: Set<String> = [
        "token", "pushkey", "secret", "auth", "p256dh", "authorization", "key", "bot-token", "password", "endpoint",
    ]
}
