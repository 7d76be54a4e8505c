import ChannelAPI
import Testing

/// The one typed reader of config sections: known keys, positions, names in errors.
@Suite struct ConfigMappingTests {
    /// A scalar at `line`:`column`.
    static func scalar(_ text: String, _ line: Int, _ column: Int) -> ConfigTree {
        ConfigTree(kind: .scalar(text, isNull: text.isEmpty), mark: ConfigMark(line: line, column: column))
    }

    /// A mapping of `pairs` (key text, value text), one a line from line 2, keys at column 3 and
    /// values at column 10.
    static func section(_ pairs: [(String, String)]) -> ConfigNode {
        let entries = pairs.enumerated().map { i, p in (key: scalar(p.0, i + 2, 3), value: scalar(p.1, i + 2, 10)) }
        let tree = ConfigTree(kind: .mapping(entries), mark: ConfigMark(line: 2, column: 3))
        return ConfigNode(tree: tree, file: "t.yaml", environment: [:], baseDirectory: "/")
    }

    @Test func anUnknownKeyIsRefusedAtTheKeyWithTheKeysItAccepts() {
        do {
            _ = try ConfigMapping(Self.section([("lease", "5s"), ("pth", "x")]), "store", keys: ["path", "lease"])
            Issue.record("an unknown key was accepted")
        } catch {
            #expect(error.description == "t.yaml:3:3: unknown key 'pth' in store (expected path, lease)")
        }
    }

    @Test func valuesAreReadByKeyAndTheirErrorsNameTheSection() throws {
        let m = try ConfigMapping(
            Self.section([("lease", "5s"), ("loops", "20"), ("on", "yes")]), "http",
            keys: ["loops", "lease", "on", "x"])
        #expect(m.written == ["lease", "loops", "on"])
        #expect(try m.duration("lease") == .seconds(5))
        #expect(try m.bool("on") == true)
        #expect(try m.string("x") == nil)
        #expect(m["x"] == nil && m.keyNode("loops")?.mark == ConfigMark(line: 3, column: 3))
        do {
            _ = try m.int("loops", in: 1...16)
            Issue.record("an integer out of range was accepted")
        } catch {
            #expect(error.description == "t.yaml:3:10: http.loops must be in 1...16, got 20")
        }
        let bare = try ConfigMapping(Self.section([("mode", "fast")]), "route step", keys: ["mode"], qualified: false)
        #expect(bare.name("mode") == "mode")
        #expect(throws: ConfigError.self) { try bare.duration("mode") }
    }

    @Test func aSectionMustBeAMapping() {
        let node = ConfigNode(tree: Self.scalar("8686", 1, 9), file: "t.yaml", environment: [:], baseDirectory: "/")
        do {
            _ = try ConfigMapping(node, "server", keys: ["listen"])
            Issue.record("a scalar was accepted as a section")
        } catch {
            #expect(error.description == "t.yaml:1:9: server must be a mapping, not a scalar")
        }
    }

    @Test func sizes() {
        #expect(ConfigNode.parseSize("64KiB") == 65536)
        #expect(ConfigNode.parseSize("2 MiB") == 2 << 20)
        #expect(ConfigNode.parseSize("512B") == 512)
        #expect(ConfigNode.parseSize("99999999999999999MiB") == nil)
        #expect(ConfigNode.parseSize("-1") == nil && ConfigNode.parseSize("KiB") == nil)
    }
}
