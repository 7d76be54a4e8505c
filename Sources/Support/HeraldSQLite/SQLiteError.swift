import CSQLite

/// An error reported by SQLite, or by this wrapper when it refuses an operation.
///
/// `call` names the C function (or wrapper step such as `"closed"` or `"migrate"`) that failed,
/// `code` is SQLite's extended result code and `message` is SQLite's own error text.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The extended result code (for example 2067 for `SQLITE_CONSTRAINT_UNIQUE`).
    public let code: Int32
    /// The C call or wrapper step that failed, for example `"sqlite3_prepare_v2"`.
    public let call: String
    /// `sqlite3_errmsg` text; for prepare errors followed by the first 200 characters of the SQL.
    public let message: String

    /// Creates an error value.
    public init(code: Int32, call: String, message: String) {
        self.code = code
        self.call = call
        self.message = message
    }

    /// The primary result code (the low 8 bits of ``code``).
    public var primaryCode: Int32 { code & 0xFF }

    /// `true` for any `SQLITE_CONSTRAINT*` code (UNIQUE, NOT NULL, FOREIGN KEY, CHECK, …).
    public var isConstraintViolation: Bool { primaryCode == SQLITE_CONSTRAINT }

    /// `true` for `SQLITE_BUSY*` and `SQLITE_LOCKED*`: the operation may succeed if retried.
    public var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }

    /// `"call failed (code): message"`.
    public var description: String { "\(call) failed (\(code)): \(message)" }

    static let closed = SQLiteError(code: SQLITE_MISUSE, call: "closed", message: "the database has been closed")
}
