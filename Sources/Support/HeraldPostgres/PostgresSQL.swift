import HeraldSQL

/// One PostgreSQL statement (or a fragment of one) with the values bound to its parameters:
/// HeraldSQL's ``SQLStatement`` in ``PostgresDialect``.
///
/// Each `\(value)` becomes the next `$n` parameter and its value is sent separately
/// (`PQexecParams`), never spliced into the text:
///
/// ```swift
/// try connection.run("UPDATE deliveries SET state = \(state) WHERE id = \(id)")
/// ```
///
/// `\(textArray: ids)` binds one `text[]` parameter (for `= ANY(…)` and `unnest(…)`), so a batch
/// of any size is one statement with one parameter. Interpolating another `PostgresSQL` embeds its
/// text and its values; parameters are numbered when the text is made.
public typealias PostgresSQL = SQLStatement<PostgresDialect>

/// PostgreSQL's way of writing parameters (`$1`, `$2`, … in order) and binding values.
public enum PostgresDialect: SQLDialect {
    /// A byte that never occurs in UTF-8, numbered by ``text(of:)``.
    @inlinable public static var placeholder: UInt8 { 0xFF }

    /// The text with each parameter numbered `$1`, `$2`, … in order.
    public static func text(of utf8: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count + 16)
        var n = 0
        for byte in utf8 {
            if byte == placeholder {
                n += 1
                out.append(UInt8(ascii: "$"))
                out += String(n).utf8
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// ``PostgresValue/text(_:)``.
    public static func bind(_ value: String) -> PostgresValue { .text(value) }
    /// ``PostgresValue/integer(_:)``.
    public static func bind(_ value: Int64) -> PostgresValue { .integer(value) }
    /// ``PostgresValue/real(_:)``.
    public static func bind(_ value: Double) -> PostgresValue { .real(value) }
    /// ``PostgresValue/bool(_:)``.
    public static func bind(_ value: Bool) -> PostgresValue { .bool(value) }
    /// ``PostgresValue/bytes(_:)``.
    public static func bind(_ value: [UInt8]) -> PostgresValue { .bytes(value) }

    /// The text form of a one-dimensional array: every element double-quoted, `"` and `\`
    /// backslash-escaped, `NULL` unquoted.
    /// Takes any sequence, so text elements go in through a lazy map, not a copied array.
    static func arrayLiteral<S: Sequence>(_ values: S) -> String where S.Element == String? {
        // Built as UTF-8 bytes: `"` and `\` are ASCII, so escaping byte by byte keeps every other
        // scalar's bytes whole.
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(2 + values.underestimatedCount * 24)
        for (i, v) in values.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            guard let v else {
                out += "NULL".utf8
                continue
            }
            out.append(UInt8(ascii: "\""))
            for byte in v.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
                out.append(byte)
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}

extension SQLStatement.Interpolation where Dialect == PostgresDialect {
    /// Appends one parameter bound to a `text[]` holding `values` (cast it: `\(textArray: ids)::text[]`).
    public mutating func appendInterpolation<S: Sequence>(textArray values: S) where S.Element == String {
        appendParameter(.text(PostgresDialect.arrayLiteral(values.lazy.map { Optional($0) })))
    }

    /// Appends one parameter bound to a `text[]` whose elements may be `NULL`.
    public mutating func appendInterpolation(optionalTextArray values: [String?]) {
        appendParameter(.text(PostgresDialect.arrayLiteral(values)))
    }
}
