import Foundation
import HeraldHTTPTesting

/// Errors raised by the test helpers themselves.
struct TestSupportError: Error, CustomStringConvertible {
    var description: String
}

/// Hex helpers and vector-file loading for the HeraldCrypto tests.
enum Vectors {
    /// The `Vectors/` folder next to this file.
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Vectors")

    /// Decodes `name` from `Vectors/` as `T` (snake_case JSON keys map to camelCase properties).
    static func load<T: Decodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(T.self, from: data)
    }
}

/// Decodes lowercase/uppercase hex; throws on odd length or a non-hex character.
func hex(_ text: String) throws -> [UInt8] {
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { throw TestSupportError(description: "odd hex length") }
    var out: [UInt8] = []
    out.reserveCapacity(digits.count / 2)
    var index = 0
    while index < digits.count {
        guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else {
            throw TestSupportError(description: "bad hex digit")
        }
        out.append(high << 4 | low)
        index += 2
    }
    return out
}

/// Encodes bytes as lowercase hex.
func hexString(_ bytes: [UInt8]) -> String {
    let table = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for byte in bytes {
        out.append(table[Int(byte >> 4)])
        out.append(table[Int(byte & 0x0F)])
    }
    return String(decoding: out, as: UTF8.self)
}

private func nibble(_ c: UInt8) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
    default: return nil
    }
}

/// Runs a command and returns (exit status, stdout, stderr).
@discardableResult
func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
    let r = try Subprocess.run(executable: executable, arguments: arguments)
    return (r.code, r.stdout, r.stderr)
}

/// A fresh temporary directory.
func makeTemporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-crypto-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
