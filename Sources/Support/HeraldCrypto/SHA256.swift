import COpenSSL

/// SHA-256 (FIPS 180-4) through OpenSSL's EVP digest API.
public enum SHA256 {
    /// Returns the 32-byte SHA-256 digest of `data`.
    ///
    /// Returns an empty array only if OpenSSL itself fails (allocation failure); it never traps.
    public static func hash(_ data: [UInt8]) -> [UInt8] {
        guard let md = OpenSSL.sha256 else { return [] }
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let status = digest.withUnsafeMutableBufferPointer { out in
            data.withUnsafeBufferPointer { EVP_Digest($0.baseAddress, $0.count, out.baseAddress, &length, md, nil) }
        }
        guard status == 1, length == 32 else {
            ERR_clear_error()
            return []
        }
        return digest
    }
}
