import COpenSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Cryptographically secure random bytes.
public enum SecureRandom {
    /// Returns `count` random bytes from OpenSSL's `RAND_bytes`.
    ///
    /// If `RAND_bytes` fails, the bytes are read from `/dev/urandom` instead; this function never traps.
    /// A `count` of zero or less returns an empty array.
    public static func bytes(_ count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: count)
        while true {
            let filled = out.withUnsafeMutableBufferPointer { buffer -> Bool in
                guard let base = buffer.baseAddress else { return false }
                if fillWithOpenSSL(base, count) { return true }
                ERR_clear_error()
                return fillFromURandom(base, count)
            }
            if filled { return out }
            // Both sources failed (no entropy yet or descriptor exhaustion): wait briefly and retry rather than
            // returning predictable bytes or trapping.
            usleep(1000)
        }
    }

    private static func fillWithOpenSSL(_ base: UnsafeMutablePointer<UInt8>, _ count: Int) -> Bool {
        var offset = 0
        while offset < count {
            let chunk = min(count - offset, Int(Int32.max))
            guard RAND_bytes(base + offset, Int32(chunk)) == 1 else { return false }
            offset += chunk
        }
        return true
    }

    private static func fillFromURandom(_ base: UnsafeMutablePointer<UInt8>, _ count: Int) -> Bool {
        let fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var offset = 0
        while offset < count {
            let got = read(fd, base + offset, count - offset)
            if got > 0 {
                offset += got
            } else if got < 0, errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }
}
