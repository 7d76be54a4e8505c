import Foundation  // getentropy on Linux (ChannelAPI imports Foundation only: ModuleGraphTests)

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

/// Cryptographically secure randomness from the operating system: on Linux one `getentropy(3)`
/// (`getrandom(2)`) call per 256 bytes asked for (a delivery id's 16 bytes took two 8-byte system
/// calls through `SystemRandomNumberGenerator` before), else `SystemRandomNumberGenerator`
/// (`arc4random_buf` on Darwin).
public struct SystemRandom: RandomSource {
    /// Creates the system source.
    public init() {}
    /// `count` bytes from the system's secure generator.
    public func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: max(0, count))
        var i = 0
        #if canImport(Glibc)
            // getentropy fills up to 256 bytes a call, whole or not at all; should it fail (no
            // getrandom(2) in the kernel, say), the generator below fills the rest.
            out.withUnsafeMutableBytes { buffer in
                guard let base = buffer.baseAddress else { return }
                while i < buffer.count {
                    let n = min(256, buffer.count - i)
                    guard getentropy(base + i, n) == 0 else { break }
                    i += n
                }
            }
        #endif
        var generator = SystemRandomNumberGenerator()
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
