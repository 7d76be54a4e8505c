import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto
import HeraldHTTP
import HeraldSodium

/// `herald-bench libs`: the C libraries' Base64 (libsodium), HKDF (OpenSSL `EVP_KDF`), HTTP-date
/// parsing (libcurl `curl_getdate`) and URL parsing for host keys (libcurl `curl_url`) against
/// Herald's hand-written code, on the same run, in CPU nanoseconds per call (lower is better).
///
/// Each pair is measured in alternating rounds (hand-written, library, hand-written, ...), and the
/// best round of each counts, so that a burst of other load on a shared machine hurts neither side.
enum LibraryBench {
    /// One compared operation: what it does and its two implementations (each returns a value that
    /// depends on the work, so the call cannot be optimised away).
    private struct Pair {
        let name: String
        let handWritten: () throws -> Int
        let library: () throws -> Int
        let libraryName: String
    }

    /// Encoding `bytes` and decoding their text, the hand-written code against libsodium's `variant`.
    private static func base64Pairs(
        _ names: (encode: String, decode: String), _ bytes: [UInt8], _ variant: SodiumBase64.Variant,
        encode: @escaping ([UInt8]) -> String, decode: @escaping (String) throws -> [UInt8]
    ) -> [Pair] {
        let text = encode(bytes)
        return [
            Pair(
                name: names.encode, handWritten: { encode(bytes).utf8.count },
                library: { SodiumBase64.encode(bytes, variant: variant).utf8.count },
                libraryName: "libsodium sodium_bin2base64"),
            Pair(
                name: names.decode, handWritten: { try decode(text).count },
                library: { try SodiumBase64.decode(text, variant: variant).count },
                libraryName: "libsodium sodium_base642bin"),
        ]
    }

    /// Runs every pair for about `seconds` per implementation and returns a markdown table.
    static func run(seconds: Double, rounds: Int = 3) throws -> String {
        let key65 = (0..<65).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        let body3k = (0..<3072).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }
        let secret32 = Array(key65.prefix(32))
        let salt16 = Array(key65.suffix(16))
        let info = Array("Content-Encoding: aes128gcm".utf8) + [0]
        let imfDate = "Sun, 06 Nov 1994 08:49:37 GMT"
        let now = Date(timeIntervalSince1970: 784_111_000)
        let url = "https://fcm.googleapis.com/v1/projects/herald-bench/messages:send"

        let base64 =
            base64Pairs(
                ("base64url encode, 65 B (a P-256 key)", "base64url decode, 65 B"), key65, .urlSafeNoPadding,
                encode: HandWrittenBase64.urlEncode, decode: { try HandWrittenBase64.urlDecode($0) })
            + base64Pairs(
                ("base64 encode, 3 KB", "base64 decode, 3 KB"), body3k, .original, encode: HandWrittenBase64.encode,
                decode: { try HandWrittenBase64.decode($0) })
        let pairs =
            base64 + [
                Pair(
                    name: "HKDF extract + expand 16 B (RFC 8291 CEK)",
                    handWritten: {
                        let prk = HKDF.extract(salt: salt16, inputKeyMaterial: secret32)
                        return try HKDF.expand(pseudoRandomKey: prk, info: info, length: 16).count
                    },
                    library: {
                        let prk = try EVPHKDF.extract(salt: salt16, inputKeyMaterial: secret32)
                        return try EVPHKDF.expand(pseudoRandomKey: prk, info: info, length: 16).count
                    },
                    libraryName: "OpenSSL EVP_KDF HKDF"),
                Pair(
                    name: "HTTP date (IMF-fixdate) to a delay",
                    handWritten: { Int(handParsedHTTPDateDelay(imfDate, now: now)?.components.seconds ?? -1) },
                    library: { Int(RetryAfter.parse(imfDate, now: now)?.components.seconds ?? -1) },
                    libraryName: "libcurl curl_getdate"),
                Pair(
                    name: "host key of a URL", handWritten: { handParsedHostKey(url).utf8.count },
                    library: { HostKey.of(url).utf8.count }, libraryName: "libcurl curl_url"),
            ]

        var lines = [
            "| operation | hand-written (ns) | library (ns) | library / hand-written | library |",
            "|---|---:|---:|---:|---|",
        ]
        for pair in pairs {
            // Both sides must agree before they are timed.
            guard try pair.handWritten() == pair.library() else {
                throw BenchError("\(pair.name): the two implementations disagree")
            }
            var bestHand = Double.infinity
            var bestLibrary = Double.infinity
            for _ in 0..<max(1, rounds) {
                bestHand = min(bestHand, try nanoseconds(seconds: seconds / Double(rounds), pair.handWritten))
                bestLibrary = min(bestLibrary, try nanoseconds(seconds: seconds / Double(rounds), pair.library))
            }
            lines.append(
                String(
                    format: "| %@ | %.0f | %.0f | %.2f | %@ |", pair.name, bestHand, bestLibrary,
                    bestLibrary / bestHand,
                    pair.libraryName))
        }
        return lines.joined(separator: "\n")
    }

    /// CPU nanoseconds per call of `body`, over about `seconds` of wall time (after a warm-up).
    private static func nanoseconds(seconds: Double, _ body: () throws -> Int) throws -> Double {
        var sink = 0
        for _ in 0..<200 { sink &+= try body() }
        let clock = ContinuousClock()
        let budget = Duration.milliseconds(Int64(max(seconds, 0.05) * 1000))
        let start = clock.now
        let cpuStart = CryptoBench.cpuSeconds()
        var count = 0
        while clock.now - start < budget {
            for _ in 0..<200 { sink &+= try body() }
            count += 200
        }
        let cpu = CryptoBench.cpuSeconds() - cpuStart
        if sink == Int.min { print("") }  // keeps `sink` alive
        return cpu / Double(count) * 1e9
    }

    /// A `Retry-After` HTTP date as Herald read it before `curl_getdate` (`RetryAfter.parse` now
    /// calls libcurl): the three RFC 9110 forms tried in turn with a `DateFormatter` made per call.
    private static func handParsedHTTPDateDelay(_ value: String, now: Date) -> Duration? {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            f.dateFormat = format
            if let d = f.date(from: value) { return RetryAfter.until(d, now: now) }
        }
        return nil
    }

    /// The host key as Herald computed it before `curl_url`: `scheme://authority` cut out by hand and
    /// lower-cased (user info and an explicit default port included as written).
    private static func handParsedHostKey(_ url: String) -> String {
        let bytes = Array(url.utf8)
        var i = 0
        while i < bytes.count, bytes[i] != UInt8(ascii: ":") { i += 1 }
        i += 3  // "://"
        while i < bytes.count, bytes[i] != UInt8(ascii: "/"), bytes[i] != UInt8(ascii: "?"),
            bytes[i] != UInt8(ascii: "#")
        {
            i += 1
        }
        // The new key carries the port; add the default one so that both sides return the same length.
        return String(decoding: bytes[..<min(i, bytes.count)], as: UTF8.self).lowercased() + ":443"
    }
}

/// A benchmark that could not run as set up.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
