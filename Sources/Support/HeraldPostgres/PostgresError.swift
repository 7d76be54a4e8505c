/// An error reported by PostgreSQL or libpq, or by this wrapper when it refuses an operation.
///
/// `sqlState` is the server's five-character SQLSTATE (for example `23505` for a unique
/// violation) when the server sent one; connection failures and wrapper refusals have none and
/// say so with ``isConnectionFailure``. The message never contains the connection password.
public struct PostgresError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The SQLSTATE code, when the server reported one.
    public let sqlState: String?
    /// The libpq call or wrapper step that failed, for example `"PQexecParams"` or `"connect"`.
    public let call: String
    /// The server's or libpq's message (one line), followed for statements by the start of the SQL.
    public let message: String
    /// `true` when the connection was lost or could not be made (the server is unreachable, was
    /// shut down, or refused the login): another connection may succeed later.
    public let isConnectionFailure: Bool

    /// Creates an error value.
    public init(sqlState: String?, call: String, message: String, isConnectionFailure: Bool = false) {
        self.sqlState = sqlState
        self.call = call
        self.message = message
        self.isConnectionFailure = isConnectionFailure
    }

    /// `23xxx`: a constraint (unique, foreign key, not null, check) was violated.
    public var isConstraintViolation: Bool { sqlState?.hasPrefix("23") ?? false }
    /// `23505`: a unique constraint was violated.
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// `40001` or `40P01`: a serialization failure or deadlock; the transaction may succeed if retried.
    public var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }

    /// `"call failed [SQLSTATE]: message"`, with a hint for connection failures.
    public var description: String {
        var text = "\(call) failed"
        if let sqlState { text += " [\(sqlState)]" }
        text += ": \(message)"
        if isConnectionFailure, !text.contains("PostgreSQL is unreachable") {
            text += " (PostgreSQL is unreachable or refused the connection)"
        }
        return text
    }

    static let closed = PostgresError(sqlState: nil, call: "closed", message: "the database has been closed")
}
