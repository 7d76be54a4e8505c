/// A source of random bytes, injected so envelopes, nonces and jitter are reproducible in tests.
public protocol RandomSource: Sendable {
    /// `count` random bytes.
    func bytes(_ count: Int) -> [UInt8]
}

extension RandomSource {
    /// A uniform value in `0..<1`, for jitter.
    public func unitInterval() -> Double {
        let b = bytes(8)
        var v: UInt64 = 0
        for x in b { v = v << 8 | UInt64(x) }
        return Double(v >> 11) / Double(UInt64(1) << 53)
    }
}

/// Cryptographically secure randomness from the operating system (`SystemRandomNumberGenerator`:
/// `getrandom(2)` on Linux, `arc4random_buf` on Darwin).
public struct SystemRandom: RandomSource {
    /// Creates the system source.
    public init() {}
    /// `count` bytes from the system's secure generator.
    public func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var out = [UInt8](repeating: 0, count: max(0, count))
        var i = 0
        while i < out.count {
            var word = generator.next()
            for _ in 0..<min(8, out.count - i) {
                out[i] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                i += 1
            }
        }
        return out
    }
}
