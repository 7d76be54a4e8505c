/// A tiny argument parser: `--name value`, `--flag`, `-c FILE`, positional words.
struct Arguments {
    var positional: [String] = []
    var options: [String: String] = [:]
    var flags: Set<String> = []

    static let flagNames: Set<String> = ["until-empty", "help", "rotate", "offline"]

    init(_ args: [String]) throws(UsageError) {
        var i = 0
        while i < args.count {
            let a = args[i]
            if a == "-c" || a == "--config" {
                guard i + 1 < args.count else { throw UsageError("\(a) needs a file") }
                options["config"] = args[i + 1]
                i += 2
            } else if a == "-h" {
                flags.insert("help")
                i += 1
            } else if a.hasPrefix("--") {
                var name = String(a.dropFirst(2))
                if let eq = name.firstIndex(of: "=") {
                    options[String(name[..<eq])] = String(name[name.index(after: eq)...])
                    i += 1
                    continue
                }
                if Arguments.flagNames.contains(name) {
                    flags.insert(name)
                    i += 1
                    continue
                }
                guard i + 1 < args.count else { throw UsageError("--\(name) needs a value") }
                if name == "device" { name = "device-id" }
                options[name] = args[i + 1]
                i += 2
            } else {
                positional.append(a)
                i += 1
            }
        }
    }

    func value(_ name: String) -> String? { options[name] }

    /// Refuses options the command does not know.
    func allow(_ names: Set<String>) throws(UsageError) {
        for k in options.keys.sorted() where !names.contains(k) && k != "config" {
            throw UsageError("unknown option --\(k)")
        }
        for f in flags.sorted() where !names.contains(f) && f != "help" {
            throw UsageError("unknown option --\(f)")
        }
    }
}

/// A command-line usage mistake (exit 2).
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}

/// Bad input or config (exit 65).
struct InputError: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}
