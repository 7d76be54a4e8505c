import Foundation
import HeraldYAML
import Testing

private func parseError(_ text: String) -> YAMLError? {
    do {
        _ = try YAMLParser.parse(text)
        return nil
    } catch {
        return error
    }
}

@Suite struct YAMLParserTests {
    @Test func nestedMappingsAndSequencesWithMarks() throws {
        let text = """
            # config
            server:
              host: example.org
              ports:
                - 80
                - 443
            channels:
              - name: push
                enabled: true

            """
        let root = try #require(try YAMLParser.parse(text))
        #expect(root.kindName == "mapping")
        #expect(root.mark == YAMLMark(line: 2, column: 1))
        let server = try #require(root["server"])
        #expect(server.mark.description == "3:3")
        #expect(server["host"]?.string == "example.org")
        #expect(server["host"]?.mark == YAMLMark(line: 3, column: 9))
        let ports = try #require(server["ports"]?.sequence)
        #expect(ports.map(\.string) == ["80", "443"])
        #expect(server["ports"]?.mark == YAMLMark(line: 5, column: 5))
        #expect(ports[1].mark == YAMLMark(line: 6, column: 7))
        let channel = try #require(root["channels"]?.sequence?.first)
        #expect(channel.mark == YAMLMark(line: 8, column: 5))
        #expect(channel["enabled"]?.scalar == YAMLScalar(value: "true", style: .plain))
        #expect(channel["enabled"]?.mark == YAMLMark(line: 9, column: 14))
        let keys = root.mapping?.map { $0.key.string }
        #expect(keys == ["server", "channels"])
        #expect(root.mapping?[1].key.mark == YAMLMark(line: 7, column: 1))
        #expect(root["missing"] == nil)
        #expect(server["host"]?["x"] == nil)
    }

    @Test func flowStyle() throws {
        let root = try #require(try YAMLParser.parse("{a: 1, b: [x, y]}"))
        #expect(root["a"]?.string == "1")
        #expect(root["b"]?.sequence?.map(\.string) == ["x", "y"])
        #expect(root["b"]?.mark == YAMLMark(line: 1, column: 11))
        #expect(root["b"]?.sequence?[1].mark == YAMLMark(line: 1, column: 15))
    }

    @Test func quotedPlainAndNull() throws {
        let text = """
            plain: hello
            single: 'it''s'
            double: "tab\\tnewline\\n"
            empty:
            tilde: ~
            word: null
            upper: NULL
            quotedNull: "null"
            tagged: !!null x
            str: !!str null

            """
        let root = try #require(try YAMLParser.parse(text))
        #expect(root["plain"]?.scalar == YAMLScalar(value: "hello", style: .plain))
        #expect(root["single"]?.scalar == YAMLScalar(value: "it's", style: .singleQuoted))
        #expect(root["double"]?.scalar == YAMLScalar(value: "tab\tnewline\n", style: .doubleQuoted))
        #expect(root["empty"]?.isNull == true)
        #expect(root["tilde"]?.isNull == true)
        #expect(root["word"]?.isNull == true)
        #expect(root["upper"]?.isNull == true)
        #expect(root["plain"]?.isNull == false)
        #expect(root["quotedNull"]?.isNull == false)
        #expect(root["tagged"]?.scalar?.isNull == true)
        #expect(root["tagged"]?.scalar?.tag == "tag:yaml.org,2002:null")
        #expect(root["str"]?.isNull == false)
    }

    @Test func blockLiteralAndFolded() throws {
        let text = """
            script: |
              line one
                indented
              line three
            folded: >
              a
              b

            """
        let root = try #require(try YAMLParser.parse(text))
        #expect(root["script"]?.scalar == YAMLScalar(value: "line one\n  indented\nline three\n", style: .literal))
        #expect(root["folded"]?.scalar == YAMLScalar(value: "a b\n", style: .folded))
    }

    @Test func duplicateKey() throws {
        let error = try #require(parseError("a: 1\nb: 2\na: 3\n"))
        #expect(error.code == .duplicateKey)
        #expect(error.mark == YAMLMark(line: 3, column: 1))
        #expect(error.message.contains("\"a\""))
        #expect(error.message.contains("line 1"))
        #expect(error.description.hasPrefix("3:1: "))
        // Same key in different mappings is fine.
        #expect(try YAMLParser.parse("x: {a: 1}\ny: {a: 2}") != nil)
    }

    @Test func badIndentation() throws {
        let error = try #require(parseError("a:\n  b: 1\n c: 2\n"))
        #expect(error.code == .syntax)
        #expect(error.mark == YAMLMark(line: 3, column: 2))
        #expect(error.message.contains("yaml_parser_parse"))
        #expect(error.message.contains("did not find expected key"))
    }

    @Test func unclosedQuote() throws {
        let error = try #require(parseError("a: \"abc\nb: 2\n"))
        #expect(error.code == .syntax)
        #expect(error.message.contains("quoted scalar"))
        #expect(error.mark?.line == 3)
    }

    @Test func tabIndentation() throws {
        let error = try #require(parseError("a:\n\tb: 1\n"))
        #expect(error.code == .syntax)
        #expect(error.mark == YAMLMark(line: 2, column: 1))
        #expect(error.message.contains("cannot start any token"))
    }

    @Test func aliasesResolve() throws {
        let text = """
            base: &base
              retries: 3
            copy: *base
            list: [&x one, *x]

            """
        let root = try #require(try YAMLParser.parse(text))
        #expect(root["copy"]?["retries"]?.string == "3")
        #expect(root["copy"]?.mark == YAMLMark(line: 3, column: 7))
        #expect(root["list"]?.sequence?.map(\.string) == ["one", "one"])
        #expect(root["list"]?.sequence?[1].mark == YAMLMark(line: 4, column: 16))
        let undefined = try #require(parseError("a: *nope\n"))
        #expect(undefined.code == .syntax)
        #expect(undefined.message.contains("nope"))
    }

    @Test func mergeKeyRefused() throws {
        let error = try #require(parseError("base: &b {x: 1}\nchild:\n  <<: *b\n  y: 2\n"))
        #expect(error.code == .unsupported)
        #expect(error.mark == YAMLMark(line: 3, column: 3))
        // A quoted "<<" is an ordinary key.
        #expect(try YAMLParser.parse("'<<': 1")?["<<"]?.string == "1")
    }

    @Test func aliasBombRefused() throws {
        var lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        for level in 1...9 {
            let previous = "*a\(level - 1)"
            let items = Array(repeating: previous, count: 10).joined(separator: ", ")
            lines.append("a\(level): &a\(level) [\(items)]")
        }
        let error = try #require(parseError(lines.joined(separator: "\n")))
        #expect(error.code == .unsupported)
        #expect(error.message.contains("100000"))
        #expect(error.mark != nil)
    }

    @Test func deepNestingRefused() throws {
        let text = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let error = try #require(parseError(text))
        #expect(error.code == .unsupported)
    }

    @Test func multipleDocumentsRefused() throws {
        let error = try #require(parseError("a: 1\n---\nb: 2\n"))
        #expect(error.code == .multipleDocuments)
        #expect(error.mark?.line == 2)
        // One explicit document with an end marker is fine.
        #expect(try YAMLParser.parse("---\na: 1\n...\n")?["a"]?.string == "1")
    }

    @Test func emptyDocumentIsNil() throws {
        #expect(try YAMLParser.parse("") == nil)
        #expect(try YAMLParser.parse("# only a comment\n\n   \n") == nil)
        #expect(try YAMLParser.parse("---\n") == nil)
        #expect(try YAMLParser.parse("~")?.isNull == true)
        #expect(try YAMLParser.parse("''")?.scalar?.style == .singleQuoted)
    }

    @Test func nonScalarKeyRefused() throws {
        let flow = try #require(parseError("? [a, b]\n: value\n"))
        #expect(flow.code == .unsupported)
        #expect(flow.mark == YAMLMark(line: 1, column: 3))
        #expect(flow.message.contains("sequence"))
        let mapping = try #require(parseError("{{a: 1}: 2}"))
        #expect(mapping.code == .unsupported)
        #expect(mapping.mark == YAMLMark(line: 1, column: 2))
    }

    @Test func invalidEncodingDoesNotCrash() throws {
        let error = #expect(throws: YAMLError.self) {
            try YAMLParser.parse(bytes: Array("a: ".utf8) + [0xFF, 0xFE, 0x41])
        }
        #expect(error?.code == .syntax)
        #expect(error?.mark == YAMLMark(line: 1, column: 4))
        let control = #expect(throws: YAMLError.self) { try YAMLParser.parse("a: \u{0}\n") }
        #expect(control?.code == .syntax)
    }

    @Test func fileNotFound() throws {
        let path = "/nonexistent/herald-\(UUID().uuidString).yaml"
        let error = #expect(throws: YAMLError.self) { try YAMLParser.parse(contentsOfFile: path) }
        #expect(error?.code == .io)
        #expect(error?.message.contains(path) == true)
        #expect(error?.mark == nil)
    }

    @Test func fileParses() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString).yaml")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "name: herald\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try YAMLParser.parse(contentsOfFile: path)?["name"]?.string == "herald")
    }
}
