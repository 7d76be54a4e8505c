import ChannelAPI
import Foundation
import Router
import RouterTesting
import Testing

/// Numbers and bytes in a config never trap: too-large, negative, NaN and infinite values, and bytes
/// that are not UTF-8, are config errors with `FILE:LINE:COLUMN` (issue 15).
@Suite struct ConfigNumberTests {
    struct Case: Sendable, CustomStringConvertible {
        let name: String
        /// The channel lines under `a:` (indented by four spaces).
        let channel: String
        let line: Int
        let column: Int
        let message: String
        var description: String { name }
    }

    static func yaml(_ channel: String) -> String {
        "version: 1\nchannels:\n  a:\n    type: rec\n\(channel)\nroutes:\n  default:\n    - deliver: [a]\n"
    }

    static let cases: [Case] = [
        // The issue's exact values.
        Case(
            name: "retry.initial 1e20 seconds", channel: "    retry: { initial: 99999999999999999999 }", line: 5,
            column: 23, message: "retry.initial is out of range"),
        Case(
            name: "retry.max 2^64 seconds", channel: "    retry: { max: 18446744073709551616 }", line: 5, column: 19,
            message: "retry.max is out of range"),
        Case(
            name: "timeout 1e300s", channel: "    timeout: 1e300s", line: 5, column: 14,
            message: "timeout is out of range"),
        // Around the limit and the other forms.
        Case(name: "timeout 36501d", channel: "    timeout: 36501d", line: 5, column: 14, message: "out of range"),
        Case(name: "timeout 1e400 (inf)", channel: "    timeout: 1e400", line: 5, column: 14, message: "out of range"),
        Case(
            name: "timeout 9.3e15ms", channel: "    timeout: 9300000000000000000ms", line: 5, column: 14,
            message: "out of range"),
        Case(name: "timeout negative", channel: "    timeout: -5s", line: 5, column: 14, message: "must be a duration"),
        Case(name: "timeout nan", channel: "    timeout: nan", line: 5, column: 14, message: "must be a duration"),
        Case(name: "timeout nans", channel: "    timeout: nans", line: 5, column: 14, message: "must be a duration"),
        Case(name: "timeout infs", channel: "    timeout: infs", line: 5, column: 14, message: "must be a duration"),
        Case(name: "timeout -inf", channel: "    timeout: -inf", line: 5, column: 14, message: "must be a duration"),
        Case(name: "timeout .inf", channel: "    timeout: .inf", line: 5, column: 14, message: "must be a duration"),
        Case(
            name: "retry.attempts 2^64", channel: "    retry: { attempts: 18446744073709551616 }", line: 5, column: 24,
            message: "retry.attempts is out of range"),
        Case(
            name: "retry.attempts -2^64", channel: "    retry: { attempts: -18446744073709551616 }", line: 5,
            column: 24, message: "retry.attempts is out of range"),
        Case(
            name: "retry.attempts 1e300", channel: "    retry: { attempts: 1e300 }", line: 5, column: 24,
            message: "retry.attempts must be an integer"),
    ]

    static let registry = ChannelRegistry(RecordingChannel().factory(type: "rec", platforms: ["ios"]))

    @Test(arguments: cases) func numberIsAPositionedError(_ c: Case) throws {
        do {
            _ = try ConfigLoader.parse(Self.yaml(c.channel), file: "n.yaml", environment: [:], registry: Self.registry)
            Issue.record("expected an error for \(c.name)")
        } catch let e {
            #expect(e.description.hasPrefix("n.yaml:\(c.line):\(c.column): "), "\(c.name): \(e)")
            #expect(e.message.contains(c.message), "\(c.name): \(e)")
        }
    }

    @Test func stepDurationsAndRetentionToo() throws {
        let cases: [(String, Int, Int)] = [
            (
                "version: 1\nhistory: { retention: 1e300s }\nchannels: { a: { type: rec } }\nroutes: { default: [ { deliver: [a] } ] }\n",
                2, 23
            ),
            (
                "version: 1\nchannels: { a: { type: rec } }\nroutes:\n  default:\n    - deliver: [a]\n      cooldown: 99999999999999999999\n",
                6, 17
            ),
            (
                "version: 1\nchannels: { a: { type: rec } }\nroutes:\n  default:\n    - deliver: [a]\n      timeout: 1e300s\n",
                6, 16
            ),
            (
                "version: 1\nhttp: { event-loops: 18446744073709551616 }\nchannels: { a: { type: rec } }\nroutes: { default: [ { deliver: [a] } ] }\n",
                2, 22
            ),
        ]
        for (yaml, line, column) in cases {
            do {
                _ = try ConfigLoader.parse(yaml, file: "n.yaml", environment: [:], registry: Self.registry)
                Issue.record("expected an error for \(yaml)")
            } catch let e {
                #expect(e.description.hasPrefix("n.yaml:\(line):\(column): "), "\(e)")
            }
        }
    }

    @Test func durationsUpToTheMaximumLoad() throws {
        #expect(ConfigNode.parseDuration("36500d") == ConfigNode.maximumDuration)
        #expect(ConfigNode.parseDuration("1e3ms") == .seconds(1))
        #expect(ConfigNode.parseDuration(".5s") == .milliseconds(500))
        #expect(ConfigNode.parseDuration("0x10") == nil)
        let config = try ConfigLoader.parse(
            Self.yaml("    timeout: 36500d\n    retry: { attempts: 100, initial: 1d, max: 36500d }"),
            environment: [:], registry: Self.registry)
        #expect(config.channels[0].timeout == ConfigNode.maximumDuration)
        // The backoff at the largest settings stays a finite duration (no trap in the conversion).
        let delay = config.channels[0].retry.backoff(attempt: 100, jitter: 1)
        #expect(delay == ConfigNode.maximumDuration)
    }

    /// An embedder may build a `RetryPolicy` without the config's range checks: the largest
    /// durations give a clamped delay, not a trap in the Double → Int64 conversion.
    @Test func aRetryPolicyBuiltInCodeNeverTraps() {
        let policy = RetryPolicy(maxAttempts: 1_000, initialDelay: .seconds(Int64.max), maxDelay: .seconds(Int64.max))
        let delay = policy.backoff(attempt: 1_000, jitter: 1)
        #expect(delay == .milliseconds(Int64.max))
    }

    // MARK: UTF-8

    static func load(bytes: [UInt8]) throws -> HeraldConfig {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "herald-utf8-\(UUID().uuidString).yaml"
        )
        .path
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try ConfigLoader.load(path: path, environment: [:], registry: registry)
    }

    @Test func invalidUTF8IsReportedAtItsByte() throws {
        let good = Array(Self.yaml("    timeout: 5s").utf8)
        // (bytes, expected line, expected column, the bad byte as printed)
        var cases: [([UInt8], Int, Int, String)] = []
        // A Latin-1 "é" in a comment on line 1, after "version: 1 # caf".
        cases.append((Array("version: 1 # caf".utf8) + [0xE9] + Array("\n".utf8) + good.dropFirst(11), 1, 17, "0xE9"))
        // A stray continuation byte at the start of line 5, after a valid two-byte character on line 4.
        var lines = Array("version: 1\nchannels:\n  a:\n    type: rec # ü\n".utf8)
        lines += [0x80] + Array("   timeout: 5s\nroutes:\n  default:\n    - deliver: [a]\n".utf8)
        cases.append((lines, 5, 1, "0x80"))
        // A truncated three-byte sequence at the end of the file.
        cases.append((good + [0xE2, 0x82], 9, 1, "0xE2"))
        // An overlong encoding of "/" and a UTF-16 surrogate, each after "# ü€" (4 characters) on line 1.
        cases.append((Array("# ü€".utf8) + [0xC0, 0xAF] + Array("\n".utf8) + good, 1, 5, "0xC0"))
        cases.append((Array("# ü€".utf8) + [0xED, 0xA0, 0x80] + Array("\n".utf8) + good, 1, 5, "0xED"))
        for (bytes, line, column, byte) in cases {
            do {
                _ = try Self.load(bytes: bytes)
                Issue.record("expected an error for \(byte)")
            } catch let e as ConfigError {
                #expect(e.mark?.line == line, "\(e)")
                #expect(e.mark?.column == column, "\(e)")
                #expect(e.message.contains("not valid UTF-8: byte \(byte)"), "\(e)")
                #expect(e.description.contains(".yaml:\(line):\(column): "), "\(e)")
            }
        }
        // Valid UTF-8 (multi-byte characters, a byte-order mark) still loads.
        _ = try Self.load(bytes: [0xEF, 0xBB, 0xBF] + Array("# ü € 𝄞\n".utf8) + good)
    }
}
