import CYAML

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Parses a single YAML document into a ``YAMLNode`` tree using libyaml's event parser.
///
/// Aliases are resolved to copies of their anchored node; merge keys (`<<`), non-scalar keys, duplicate keys and
/// multiple documents are refused. The whole tree is capped at ``maximumNodeCount`` nodes (counting alias
/// expansions) and ``maximumDepth`` levels of nesting, so hostile input cannot exhaust memory or the stack.
public enum YAMLParser {
    /// The most nodes a document may expand to, counting every alias expansion.
    public static let maximumNodeCount = 100_000
    /// The deepest nesting of sequences and mappings accepted.
    public static let maximumDepth = 256
    /// The largest file ``parse(contentsOfFile:)`` reads.
    public static let maximumFileSize = 16 * 1024 * 1024

    /// Parses one document. Returns nil for an empty document (only comments/whitespace).
    public static func parse(_ text: String) throws(YAMLError) -> YAMLNode? {
        try parse(bytes: Array(text.utf8))
    }

    /// Parses one document from raw bytes (UTF-8, or UTF-16 with a byte-order mark). Invalid encodings are
    /// reported as ``YAMLError/Code/syntax``. Returns nil for an empty document.
    public static func parse(bytes: [UInt8]) throws(YAMLError) -> YAMLNode? {
        if bytes.isEmpty { return nil }
        let parser = UnsafeMutablePointer<yaml_parser_t>.allocate(capacity: 1)
        defer { parser.deallocate() }
        guard yaml_parser_initialize(parser) == 1 else {
            throw YAMLError(code: .io, message: "yaml_parser_initialize failed (out of memory)")
        }
        defer { yaml_parser_delete(parser) }
        let result = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(YAMLError) -> YAMLNode? in
                guard let base = buffer.baseAddress else { return nil }
                yaml_parser_set_input_string(parser, base, buffer.count)
                return try run(parser, bytes: bytes)
            }
        }
        return try result.get()
    }

    /// Reads and parses a file. Failing to read it throws ``YAMLError/Code/io`` naming the path.
    public static func parse(contentsOfFile path: String) throws(YAMLError) -> YAMLNode? {
        try parse(bytes: readFile(path))
    }

    // MARK: - Event loop

    private static func run(_ parser: UnsafeMutablePointer<yaml_parser_t>, bytes: [UInt8]) throws(YAMLError)
        -> YAMLNode?
    {
        var builder = TreeBuilder()
        while true {
            var event = yaml_event_t()
            guard yaml_parser_parse(parser, &event) == 1 else {
                throw parserError(parser.pointee, bytes: bytes)
            }
            defer { yaml_event_delete(&event) }
            if event.type == YAML_STREAM_END_EVENT { break }
            try builder.handle(event)
        }
        return builder.document
    }

    private static func parserError(_ parser: yaml_parser_t, bytes: [UInt8]) -> YAMLError {
        let problem = parser.problem.map { String(cString: $0) } ?? "unknown error"
        switch parser.error {
        case YAML_MEMORY_ERROR:
            return YAMLError(code: .syntax, message: "yaml_parser_parse: out of memory")
        case YAML_READER_ERROR:
            var message = "yaml_parser_parse: invalid input: \(problem)"
            if parser.problem_value != -1 {
                message += " (#\(String(parser.problem_value, radix: 16, uppercase: true)))"
            }
            message += " at byte offset \(parser.problem_offset)"
            return YAMLError(code: .syntax, message: message, mark: mark(ofOffset: parser.problem_offset, in: bytes))
        default:
            var message = "yaml_parser_parse: "
            if let context = parser.context.map({ String(cString: $0) }) {
                message += "\(context) started at \(mark(parser.context_mark)): "
            }
            message += problem
            return YAMLError(code: .syntax, message: message, mark: mark(parser.problem_mark))
        }
    }

    static func mark(_ mark: yaml_mark_t) -> YAMLMark {
        YAMLMark(line: Int(mark.line) + 1, column: Int(mark.column) + 1)
    }

    /// Reader errors carry only a byte offset; derive a line and (character) column from it.
    private static func mark(ofOffset offset: Int, in bytes: [UInt8]) -> YAMLMark {
        var line = 1
        var column = 1
        for byte in bytes.prefix(offset) {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return YAMLMark(line: line, column: column)
    }

    // MARK: - Files

    private static func readFile(_ path: String) throws(YAMLError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else {
            throw YAMLError(code: .io, message: "open(\(path)): \(errorText(errno))")
        }
        defer { close(descriptor) }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw YAMLError(code: .io, message: "read(\(path)): \(errorText(errno))")
            }
            if count == 0 { break }
            contents.append(contentsOf: chunk.prefix(count))
            if contents.count > maximumFileSize {
                throw YAMLError(code: .io, message: "\(path): larger than \(maximumFileSize) bytes")
            }
        }
        return contents
    }

    private static func errorText(_ code: Int32) -> String {
        strerror(code).map { String(cString: $0) } ?? "error \(code)"
    }
}

/// Builds the tree from libyaml events with an explicit stack (no recursion).
private struct TreeBuilder {
    private struct Frame {
        var isMapping: Bool
        var mark: YAMLMark
        var anchor: String?
        var items: [YAMLNode] = []
        var pairs: [YAMLPair] = []
        var pendingKey: YAMLNode?
        var seenKeys: [String: YAMLMark] = [:]
        /// Nodes in this subtree, counting the collection itself and alias expansions.
        var count = 1
    }

    private var stack: [Frame] = []
    private var anchors: [String: (node: YAMLNode, count: Int)] = [:]
    private var totalNodes = 0
    private var documents = 0
    private var root: YAMLNode?

    /// The parsed document, or nil when the stream was empty or held only an empty plain scalar.
    var document: YAMLNode? {
        guard let root else { return nil }
        if let scalar = root.scalar, scalar.value.isEmpty, scalar.style == .plain, scalar.tag == nil {
            return nil
        }
        return root
    }

    mutating func handle(_ event: yaml_event_t) throws(YAMLError) {
        let mark = YAMLParser.mark(event.start_mark)
        switch event.type {
        case YAML_DOCUMENT_START_EVENT:
            documents += 1
            if documents > 1 {
                throw YAMLError(
                    code: .multipleDocuments,
                    message: "more than one YAML document in the stream; the second one starts here", mark: mark)
            }
        case YAML_SCALAR_EVENT:
            let data = event.data.scalar
            let value =
                data.value.map {
                    String(decoding: UnsafeBufferPointer(start: $0, count: data.length), as: UTF8.self)
                } ?? ""
            let scalar = YAMLScalar(value: value, style: Self.style(data.style), tag: Self.string(data.tag))
            try countNodes(1, at: mark)
            let node = YAMLNode(kind: .scalar(scalar), mark: mark)
            if let anchor = Self.string(data.anchor) { anchors[anchor] = (node, 1) }
            try add(node, count: 1)
        case YAML_ALIAS_EVENT:
            let name = Self.string(event.data.alias.anchor) ?? ""
            guard let anchored = anchors[name] else {
                throw YAMLError(code: .syntax, message: "undefined alias *\(name)", mark: mark)
            }
            try countNodes(anchored.count, at: mark)
            var node = anchored.node
            node.mark = mark
            try add(node, count: anchored.count)
        case YAML_SEQUENCE_START_EVENT:
            try push(isMapping: false, mark: mark, anchor: Self.string(event.data.sequence_start.anchor))
        case YAML_MAPPING_START_EVENT:
            try push(isMapping: true, mark: mark, anchor: Self.string(event.data.mapping_start.anchor))
        case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
            guard let frame = stack.popLast() else { return }
            let node = YAMLNode(
                kind: frame.isMapping ? .mapping(frame.pairs) : .sequence(frame.items), mark: frame.mark)
            if let anchor = frame.anchor { anchors[anchor] = (node, frame.count) }
            try add(node, count: frame.count)
        default:
            break  // stream start, document end, no-op events
        }
    }

    private mutating func push(isMapping: Bool, mark: YAMLMark, anchor: String?) throws(YAMLError) {
        if let top = stack.last, top.isMapping, top.pendingKey == nil {
            throw YAMLError(
                code: .unsupported,
                message: "mapping keys must be scalars, found a \(isMapping ? "mapping" : "sequence")", mark: mark)
        }
        guard stack.count < YAMLParser.maximumDepth else {
            throw YAMLError(
                code: .unsupported, message: "nesting deeper than \(YAMLParser.maximumDepth) levels", mark: mark)
        }
        try countNodes(1, at: mark)
        stack.append(Frame(isMapping: isMapping, mark: mark, anchor: anchor))
    }

    private mutating func countNodes(_ count: Int, at mark: YAMLMark) throws(YAMLError) {
        totalNodes += count
        if totalNodes > YAMLParser.maximumNodeCount {
            throw YAMLError(
                code: .unsupported,
                message: "document expands to more than \(YAMLParser.maximumNodeCount) nodes "
                    + "(aliases multiply their anchor; refusing a possible alias bomb)",
                mark: mark)
        }
    }

    private mutating func add(_ node: YAMLNode, count: Int) throws(YAMLError) {
        guard var frame = stack.popLast() else {
            root = node
            return
        }
        frame.count += count
        if !frame.isMapping {
            frame.items.append(node)
        } else if let key = frame.pendingKey {
            frame.pairs.append(YAMLPair(key: key, value: node))
            frame.pendingKey = nil
        } else {
            guard let scalar = node.scalar else {
                throw YAMLError(
                    code: .unsupported, message: "mapping keys must be scalars, found a \(node.kindName)",
                    mark: node.mark)
            }
            if (scalar.style == .plain && scalar.tag == nil && scalar.value == "<<")
                || scalar.tag == "tag:yaml.org,2002:merge"
            {
                throw YAMLError(code: .unsupported, message: "merge keys (<<) are not supported", mark: node.mark)
            }
            if let first = frame.seenKeys[scalar.value] {
                throw YAMLError(
                    code: .duplicateKey,
                    message: "duplicate key \"\(scalar.value)\" (first defined at line \(first.line))",
                    mark: node.mark)
            }
            frame.seenKeys[scalar.value] = node.mark
            frame.pendingKey = node
        }
        stack.append(frame)
    }

    private static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        pointer.map { String(cString: $0) }
    }

    private static func style(_ style: yaml_scalar_style_t) -> YAMLScalar.Style {
        switch style {
        case YAML_SINGLE_QUOTED_SCALAR_STYLE: return .singleQuoted
        case YAML_DOUBLE_QUOTED_SCALAR_STYLE: return .doubleQuoted
        case YAML_LITERAL_SCALAR_STYLE: return .literal
        case YAML_FOLDED_SCALAR_STYLE: return .folded
        default: return .plain
        }
    }
}
