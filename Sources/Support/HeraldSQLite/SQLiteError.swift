import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

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

    /// The operating system's `errno` behind an I/O error (`sqlite3_system_errno`), 0 when unknown.
    public let systemErrno: Int32
    /// The database file, when the error happened on an open database.
    public let path: String?

    /// Creates an error value.
    public init(code: Int32, call: String, message: String, systemErrno: Int32 = 0, path: String? = nil) {
        self.code = code
        self.call = call
        self.message = message
        self.systemErrno = systemErrno
        self.path = path
    }

    /// The same error, naming `path` (the file the operation was on).
    public func at(_ path: String) -> SQLiteError {
        SQLiteError(code: code, call: call, message: message, systemErrno: systemErrno, path: self.path ?? path)
    }

    /// `true` when the disk (or the file system's quota) is full: `SQLITE_FULL`, or an I/O error
    /// whose `errno` is `ENOSPC`/`EDQUOT`.
    public var isDiskFull: Bool {
        primaryCode == SQLITE_FULL || systemErrno == ENOSPC || systemErrno == EDQUOT
    }

    /// The primary result code (the low 8 bits of ``code``).
    public var primaryCode: Int32 { code & 0xFF }

    /// `true` for any `SQLITE_CONSTRAINT*` code (UNIQUE, NOT NULL, FOREIGN KEY, CHECK, …).
    public var isConstraintViolation: Bool { primaryCode == SQLITE_CONSTRAINT }

    /// `true` for `SQLITE_BUSY*` and `SQLITE_LOCKED*`: the operation may succeed if retried.
    public var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }

    /// `"path: call failed (code): message"` (without the path when unknown), with what the code
    /// means for a person when that is not obvious: a full disk, or a lock held by another process.
    public var description: String {
        var text = "\(call) failed (\(code)): \(message)"
        if let path { text = "\(path): " + text }
        if isDiskFull {
            text += " (no space left on the device)"
        } else if isBusy {
            text += " (another process holds the database lock; gave up after the busy timeout)"
        }
        return text
    }

    static let closed = SQLiteError(code: SQLITE_MISUSE, call: "closed", message: "the database has been closed")
}
