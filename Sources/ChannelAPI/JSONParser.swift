/// A strict RFC 8259 JSON parser over UTF-8 bytes. Pure code, no Foundation.
///
/// Duplicate object keys are refused (they make the meaning of a document ambiguous), nesting is
/// capped, and every error carries the byte offset.
enum JSONParser {
    static let maxDepth = 128

    static func parse(_ bytes: [UInt8]) throws(JSONError) -> JSONValue {
        var parser = State(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else {
            throw JSONError(message: "unexpected trailing data", offset: parser.index)
        }
        return value
    }

    struct State {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        func fail(_ message: String) -> JSONError { JSONError(message: message, offset: index) }

        mutating func parseValue(depth: Int) throws(JSONError) -> JSONValue {
            guard depth < JSONParser.maxDepth else { throw fail("nesting deeper than \(JSONParser.maxDepth)") }
            guard index < bytes.count else { throw fail("unexpected end of input") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try parseObject(depth: depth)
            case UInt8(ascii: "["): return try parseArray(depth: depth)
            case UInt8(ascii: "\""): return .string(try parseString())
            case UInt8(ascii: "t"):
                try literal("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
            default: throw fail("unexpected character")
            }
        }

        mutating func literal(_ word: StaticString) throws(JSONError) {
            let count = word.utf8CodeUnitCount
            let matches =
                index + count <= bytes.count
                && word.withUTF8Buffer { w in
                    var i = 0
                    while i < count, bytes[index + i] == w[i] { i += 1 }
                    return i == count
                }
            guard matches else { throw fail("invalid literal") }
            index += count
        }

        mutating func parseObject(depth: Int) throws(JSONError) -> JSONValue {
            index += 1
            var members: [String: JSONValue] = [:]
            if skip(UInt8(ascii: "}")) { return .object(members) }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw fail("expected a string key")
                }
                let keyOffset = index
                let key = try parseString()
                guard skip(UInt8(ascii: ":")) else { throw fail("expected ':'") }
                skipWhitespace()
                // One hash of the key: a duplicate is found as the value is stored.
                guard members.updateValue(try parseValue(depth: depth + 1), forKey: key) == nil else {
                    throw JSONError(message: "duplicate key \"\(key)\"", offset: keyOffset)
                }
                if try endOfElement(UInt8(ascii: "}"), in: "object") { return .object(members) }
            }
        }

        mutating func parseArray(depth: Int) throws(JSONError) -> JSONValue {
            index += 1
            var elements: [JSONValue] = []
            if skip(UInt8(ascii: "]")) { return .array(elements) }
            while true {
                skipWhitespace()
                elements.append(try parseValue(depth: depth + 1))
                if try endOfElement(UInt8(ascii: "]"), in: "array") { return .array(elements) }
            }
        }

        /// Consumes `byte` when it is the next one after white space; false (nothing consumed but the
        /// white space) when it is not.
        mutating func skip(_ byte: UInt8) -> Bool {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        /// After a member or element: consumes `,` (false: another one follows) or `close` (true: the
        /// object or array ends).
        mutating func endOfElement(_ close: UInt8, in container: String) throws(JSONError) -> Bool {
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input in \(container)") }
            if skip(UInt8(ascii: ",")) { return false }
            if skip(close) { return true }
            throw fail("expected ',' or '\(Character(Unicode.Scalar(close)))'")
        }

        mutating func parseNumber() throws(JSONError) -> Double {
            let start = index
            let negative = bytes[index] == UInt8(ascii: "-")
            if negative { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
            let digitsStart = index
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            // A plain integer of up to 15 digits is exact in a Double: no text to convert.
            if index - digitsStart <= 15,
                index == bytes.count
                    || (bytes[index] != UInt8(ascii: ".") && bytes[index] != UInt8(ascii: "e")
                        && bytes[index] != UInt8(ascii: "E"))
            {
                var v: Int64 = 0
                for i in digitsStart..<index { v = v * 10 + Int64(bytes[i] - 0x30) }
                return negative ? -Double(v) : Double(v)
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            guard let value = Double(text), value.isFinite else {
                throw JSONError(message: "number out of range", offset: start)
            }
            return value
        }

        func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

        mutating func parseString() throws(JSONError) -> String {
            index += 1
            var runStart = index
            var out = ""
            var ascii = true
            func flushRun(_ end: Int) throws(JSONError) {
                if end > runStart {
                    // ASCII needs no validation (and no generic validating initialiser per string).
                    let s: String
                    if ascii {
                        s = String(decoding: bytes[runStart..<end], as: UTF8.self)
                    } else {
                        guard let valid = String(validating: bytes[runStart..<end], as: UTF8.self) else {
                            throw JSONError(message: "invalid UTF-8 in string", offset: runStart)
                        }
                        s = valid
                    }
                    if out.isEmpty { out = s } else { out += s }
                }
                ascii = true
            }
            while true {
                guard index < bytes.count else { throw fail("unterminated string") }
                let b = bytes[index]
                if b == UInt8(ascii: "\"") {
                    try flushRun(index)
                    index += 1
                    return out
                }
                if b < 0x20 { throw fail("unescaped control character in string") }
                if b >= 0x80 { ascii = false }
                if b == UInt8(ascii: "\\") {
                    try flushRun(index)
                    index += 1
                    guard index < bytes.count else { throw fail("unterminated escape") }
                    let e = bytes[index]
                    index += 1
                    switch e {
                    case UInt8(ascii: "\""): out += "\""
                    case UInt8(ascii: "\\"): out += "\\"
                    case UInt8(ascii: "/"): out += "/"
                    case UInt8(ascii: "b"): out += "\u{08}"
                    case UInt8(ascii: "f"): out += "\u{0C}"
                    case UInt8(ascii: "n"): out += "\n"
                    case UInt8(ascii: "r"): out += "\r"
                    case UInt8(ascii: "t"): out += "\t"
                    case UInt8(ascii: "u"):
                        let first = try hex4()
                        if (0xD800...0xDBFF).contains(first) {
                            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                                bytes[index + 1] == UInt8(ascii: "u")
                            else { throw fail("unpaired surrogate") }
                            index += 2
                            let second = try hex4()
                            guard (0xDC00...0xDFFF).contains(second) else { throw fail("unpaired surrogate") }
                            let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                            guard let scalar = Unicode.Scalar(code) else { throw fail("invalid escape") }
                            out.unicodeScalars.append(scalar)
                        } else {
                            guard let scalar = Unicode.Scalar(first) else { throw fail("unpaired surrogate") }
                            out.unicodeScalars.append(scalar)
                        }
                    default: throw fail("invalid escape")
                    }
                    runStart = index
                    continue
                }
                index += 1
            }
        }

        mutating func hex4() throws(JSONError) -> UInt32 {
            guard index + 4 <= bytes.count else { throw fail("short \\u escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let b = bytes[index]
                let d: UInt32
                switch b {
                case 0x30...0x39: d = UInt32(b - 0x30)
                case 0x41...0x46: d = UInt32(b - 0x41 + 10)
                case 0x61...0x66: d = UInt32(b - 0x61 + 10)
                default: throw fail("invalid hex digit in \\u escape")
                }
                v = v << 4 | d
                index += 1
            }
            return v
        }
    }
}
