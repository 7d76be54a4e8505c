/// Splits a byte stream into newline-terminated lines, holding at most ``maxLine`` bytes of an
/// unfinished line. A longer line is dropped (its bytes up to the next newline are skipped) and
/// reported once as ``Piece/overlong(_:)``. Pure.
struct ExecLineBuffer: Sendable {
    /// What a chunk of input gave.
    enum Piece: Sendable, Equatable {
        /// A whole line, without its newline (a trailing `\r` is kept).
        case line([UInt8])
        /// A line longer than the limit was dropped; the count is how many bytes were held when it was.
        case overlong(Int)
    }

    /// The longest line kept, in bytes.
    let maxLine: Int
    private var partial: [UInt8] = []
    private var skipping = false

    /// A buffer keeping lines of at most `maxLine` bytes.
    init(maxLine: Int) { self.maxLine = maxLine }

    /// Adds `chunk`; returns the lines it finished.
    mutating func append(_ chunk: ArraySlice<UInt8>) -> [Piece] {
        var out: [Piece] = []
        var rest = chunk
        while !rest.isEmpty {
            guard let nl = rest.firstIndex(of: UInt8(ascii: "\n")) else {
                take(rest, into: &out)
                break
            }
            take(rest[rest.startIndex..<nl], into: &out)
            if !skipping {
                out.append(.line(partial))
            }
            partial = []
            skipping = false
            rest = rest[(nl + 1)...]
        }
        return out
    }

    /// The bytes of an unfinished line at the end of the stream, as a line (nil when none).
    mutating func finish() -> [UInt8]? {
        defer {
            partial = []
            skipping = false
        }
        return partial.isEmpty || skipping ? nil : partial
    }

    private mutating func take(_ bytes: ArraySlice<UInt8>, into out: inout [Piece]) {
        guard !skipping else { return }
        if partial.count + bytes.count > maxLine {
            out.append(.overlong(partial.count + bytes.count))
            partial = []
            skipping = true
        } else {
            partial += bytes
        }
    }
}
