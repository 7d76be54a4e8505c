/// The strings openchamber's signed relay signs (ES256), shared by the signing side (the `relay`
/// channel, `protocol: openchamber`) and the verifying side (`herald serve`'s openchamber relay).
/// `ts` is Unix milliseconds.
public enum OpenChamberSignedInput {
    /// register-token signs `"<ts>.<token>.<platform>"`.
    public static func register(ts: Int64, token: String, platform: String) -> String { "\(ts).\(token).\(platform)" }

    /// `tokens` sorted as JavaScript's default `Array.prototype.sort` does (by UTF-16 code unit).
    public static func sortedForSigning(_ tokens: [String]) -> [String] {
        tokens.sorted { $0.utf16.lexicographicallyPrecedes($1.utf16) }
    }

    /// send signs `"<ts>.<tokens sorted by UTF-16 code unit, joined by ','>.<title>"`.
    public static func send(ts: Int64, tokens: [String], title: String) -> String {
        "\(ts).\(sortedForSigning(tokens).joined(separator: ",")).\(title)"
    }
}
