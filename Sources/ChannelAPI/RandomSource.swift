import HeraldCrypto

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

/// Cryptographically secure randomness from OpenSSL.
public struct SystemRandom: RandomSource {
    /// Creates the system source.
    public init() {}
    /// `RAND_bytes`.
    public func bytes(_ count: Int) -> [UInt8] { SecureRandom.bytes(count) }
}
