import COpenSSL

/// Constant-time comparisons (`CRYPTO_memcmp`).
public enum ConstantTime {
    /// Returns `true` if `a` and `b` are equal, in time that depends only on their length.
    ///
    /// Arrays of different lengths compare unequal immediately (the length is not treated as secret).
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in CRYPTO_memcmp(pa.baseAddress, pb.baseAddress, pa.count) == 0 }
        }
    }
}
