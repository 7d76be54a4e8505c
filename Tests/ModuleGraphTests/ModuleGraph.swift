import Foundation

/// The package's Swift modules as declared in Package.swift, with the modules each one's sources
/// import: what ``ModuleGraphTests`` checks the layering rules on.
struct ModuleGraph {
    /// One target of Package.swift.
    struct Target: Equatable {
        /// The target's name.
        var name: String
        /// `target`, `executableTarget`, `testTarget` or `systemLibrary`.
        var kind: String
        /// Its declared dependencies.
        var dependencies: [String]
        /// Its source directory, relative to the package root.
        var path: String
    }

    /// Every target, by name.
    var targets: [String: Target]
    /// Every Swift module imported by each target's sources.
    var imports: [String: Set<String>]

    /// Reads the targets of a Package.swift text: each `.target(`, `.executableTarget(`,
    /// `.testTarget(` or `.systemLibrary(` call with its `name:`, `dependencies:` and `path:`.
    static func parseTargets(_ manifest: String) -> [Target] {
        var out: [Target] = []
        let kinds = ["target", "executableTarget", "testTarget", "systemLibrary"]
        var rest = Substring(manifest)
        while let open = kinds.compactMap({ rest.range(of: ".\($0)(") }).min(by: { $0.lowerBound < $1.lowerBound }) {
            let kind = String(rest[rest.index(after: open.lowerBound)..<rest.index(before: open.upperBound)])
            // The call's text: up to its matching parenthesis.
            var depth = 1
            var i = open.upperBound
            while i < rest.endIndex, depth > 0 {
                if rest[i] == "(" { depth += 1 } else if rest[i] == ")" { depth -= 1 }
                i = rest.index(after: i)
            }
            let call = String(rest[open.upperBound..<i])
            rest = rest[i...]
            guard let name = firstString(after: "name:", in: call) else { continue }
            var dependencies: [String] = []
            if let d = call.range(of: "dependencies:"), let lb = call[d.upperBound...].firstIndex(of: "["),
                let rb = call[lb...].firstIndex(of: "]")
            {
                dependencies = quoted(call[lb..<rb])
            }
            let defaultRoot = kind == "testTarget" ? "Tests/" : "Sources/"
            let path = firstString(after: "path:", in: call) ?? defaultRoot + name
            out.append(Target(name: name, kind: kind, dependencies: dependencies, path: path))
        }
        return out
    }

    /// The module names a Swift source imports (`import X`, `@testable import X`, `public import X`,
    /// `@_exported import X`, `import struct X.Y`).
    static func imports(in source: String) -> Set<String> {
        var out: Set<String> = []
        for line in source.split(separator: "\n") {
            var words = line.split(separator: " ").map(String.init)
            while let w = words.first, w.hasPrefix("@") || ["public", "internal", "package"].contains(w) {
                words.removeFirst()
            }
            guard words.first == "import", words.count >= 2 else { continue }
            let target =
                ["struct", "class", "enum", "protocol", "func", "var", "let", "typealias"].contains(words[1])
                ? (words.count > 2 ? words[2] : "") : words[1]
            if let module = target.split(separator: ".").first { out.insert(String(module)) }
        }
        return out
    }

    /// Public declarations of `source` that mention a C type: a name from `cTypeNames`, an
    /// `OpaquePointer`, or an `Unsafe…Pointer<…>` of anything but Swift's own byte and integer types.
    static func cTypesInPublicSignatures(_ source: String, cTypeNames: Set<String>) -> [String] {
        var found: [String] = []
        let swiftPointees: Set<String> = [
            "UInt8", "Int8", "CChar", "UInt16", "UInt32", "UInt64", "Int", "Int32", "Int64", "Double", "Float", "Void",
        ]
        for raw in source.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            guard line.hasPrefix("public ") || line.hasPrefix("open ") || line.hasPrefix("@inlinable public ") else {
                continue
            }
            let identifiers = Set(
                line.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") }).map(String.init))
            if identifiers.contains("OpaquePointer") || !identifiers.isDisjoint(with: cTypeNames) {
                found.append(line)
                continue
            }
            var rest = Substring(line)
            while let r = rest.range(of: #"Unsafe(Mutable)?(Raw)?(Buffer)?Pointer<"#, options: .regularExpression) {
                let argument = rest[r.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                if !swiftPointees.contains(String(argument)) {
                    found.append(line)
                    break
                }
                rest = rest[r.upperBound...]
            }
        }
        return found
    }

    private static func firstString(after label: String, in text: String) -> String? {
        guard let r = text.range(of: label) else { return nil }
        return quoted(text[r.upperBound...]).first
    }

    private static func quoted(_ text: Substring) -> [String] {
        var out: [String] = []
        var current: String?
        for c in text {
            if c == "\"" {
                if let s = current {
                    out.append(s)
                    current = nil
                } else {
                    current = ""
                }
            } else if current != nil {
                current?.append(c)
            }
        }
        return out
    }

    /// Loads the package at `root`.
    static func load(root: URL) throws -> ModuleGraph {
        let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        var targets: [String: Target] = [:]
        var imports: [String: Set<String>] = [:]
        for t in parseTargets(manifest) {
            targets[t.name] = t
            var set: Set<String> = []
            for file in swiftFiles(under: root.appendingPathComponent(t.path)) {
                set.formUnion(Self.imports(in: (try? String(contentsOf: file, encoding: .utf8)) ?? ""))
            }
            imports[t.name] = set
        }
        return ModuleGraph(targets: targets, imports: imports)
    }

    /// Every `.swift` file under `dir`.
    static func swiftFiles(under dir: URL) -> [URL] {
        guard let e = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: nil) else { return [] }
        return e.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }.sorted { $0.path < $1.path }
    }
}
