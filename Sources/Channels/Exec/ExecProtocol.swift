import ChannelAPI

/// Why a line from an exec plugin was refused, or why its plugin could not be started: a code for
/// the log's `problem` field and a sentence that quotes none of the line (it may hold secrets).
struct ExecProtocolError: Error, Sendable, Equatable {
    /// What kind of problem it is.
    enum Code: String, Sendable {
        /// The line is not JSON.
        case notJSON = "not-json"
        /// Not a message of the protocol: no integer `id`, neither `result` nor `error`, a result
        /// item without its members.
        case wrongShape = "wrong-shape"
        /// An answer to no request in flight (late or made up).
        case unknownId = "unknown-id"
        /// A result for a delivery not in its batch, or a second one.
        case unknownDelivery = "unknown-delivery"
        /// Longer than the channel buffers.
        case lineTooLong = "line-too-long"
        /// The handshake was refused (version, platforms, config keys) or the plugin did not start.
        case handshake
    }
    var code: Code
    var message: String
}

/// An answer line of the plugin: the request id it answers and its `result` or `error`.
struct ExecAnswer: Sendable, Equatable {
    /// The request id.
    let id: Int
    /// The `result` member, or nil when the plugin answered an `error`.
    let result: JSONValue?
    /// The `error` member's `message` (and `field`, for `validate`).
    let error: (message: String, field: String?)?

    static func == (a: ExecAnswer, b: ExecAnswer) -> Bool {
        a.id == b.id && a.result == b.result && a.error?.message == b.error?.message && a.error?.field == b.error?.field
    }
}

/// What a plugin declared in its handshake answer.
public struct ExecHandshake: Sendable, Equatable {
    /// One platform the plugin serves.
    public struct Platform: Sendable, Equatable {
        /// The platform name devices register with.
        public var name: String
        /// Device field names whose values are secrets.
        public var secretFields: Set<String>
    }

    /// The protocol version the plugin speaks.
    public var version: Int
    /// The plugin's platforms.
    public var platforms: [Platform]
    /// The keys the plugin accepts under the channel's `config:`.
    public var configKeys: Set<String>
    /// The keys among ``configKeys`` whose values are secrets.
    public var secretConfigKeys: Set<String>

    /// The secret field names of `platform` (empty for a platform the plugin did not declare).
    public func secretFields(of platform: String) -> Set<String> {
        platforms.first { $0.name == platform }?.secretFields ?? []
    }
}

/// The exec channel protocol, version 1 (docs/exec-channels.md): the lines Herald writes and the
/// answers it reads. Pure: bytes in, values out.
public enum ExecProtocol {
    /// The protocol version this Herald speaks.
    public static let version = 1

    // MARK: Requests

    /// The `handshake` request line.
    public static func handshake(id: Int, channel: String, platforms: [String], config: JSONValue) -> [UInt8] {
        line([
            "id": .number(Double(id)), "method": "handshake", "protocol": .number(Double(version)),
            "channel": .string(channel), "platforms": .array(platforms.map { .string($0) }), "config": config,
        ])
    }

    /// The `deliver` request line: the notification in the contract form, the badge to show and the
    /// targets (delivery id, attempt, device).
    public static func deliver(id: Int, request: DeliveryRequest) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256 + request.targets.count * 160)
        out += Array(#"{"id":\#(id),"method":"deliver","notification":"#.utf8)
        out += request.notification.json.canonicalBytes
        if let badge = request.effectiveBadge { out += Array(#","badge":\#(badge)"#.utf8) }
        out += Array(#","targets":["#.utf8)
        for (i, t) in request.targets.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            var o: [String: JSONValue] = ["deliveryId": .string(t.deliveryId), "attempt": .number(Double(t.attempt))]
            if let d = t.device { o["device"] = d.json }
            out += JSONValue.object(o).canonicalBytes
        }
        out += Array("]}\n".utf8)
        return out
    }

    /// The `validate` request line for a device registration.
    public static func validate(id: Int, device: Device) -> [UInt8] {
        line(["id": .number(Double(id)), "method": "validate", "device": device.json])
    }

    /// The `shutdown` request line.
    public static func shutdown(id: Int) -> [UInt8] {
        line(["id": .number(Double(id)), "method": "shutdown"])
    }

    static func line(_ object: [String: JSONValue]) -> [UInt8] {
        JSONValue.object(object).canonicalBytes + [UInt8(ascii: "\n")]
    }

    // MARK: Answers

    /// Reads one answer line: `{"id": N, "result": …}` or `{"id": N, "error": {"message": …}}`.
    static func answer(_ line: [UInt8]) -> Result<ExecAnswer, ExecProtocolError> {
        let value: JSONValue
        do { value = try JSONValue.parse(line) } catch {
            return .failure(ExecProtocolError(code: .notJSON, message: error.description))
        }
        guard let o = value.objectValue else {
            return .failure(
                ExecProtocolError(code: .wrongShape, message: "a line must be a JSON object, not \(value.kindName)"))
        }
        guard let idValue = o["id"], let id = idValue.intValue, Double(id) == idValue.numberValue else {
            return .failure(ExecProtocolError(code: .wrongShape, message: "an answer needs an integer \"id\""))
        }
        if let e = o["error"] {
            guard let message = e["message"]?.stringValue ?? e.stringValue else {
                return .failure(
                    ExecProtocolError(code: .wrongShape, message: "\"error\" needs a string \"message\" (id \(id))"))
            }
            return .success(ExecAnswer(id: id, result: nil, error: (message, e["field"]?.stringValue)))
        }
        guard let result = o["result"] else {
            return .failure(
                ExecProtocolError(code: .wrongShape, message: "an answer needs \"result\" or \"error\" (id \(id))"))
        }
        return .success(ExecAnswer(id: id, result: result, error: nil))
    }

    /// Reads the `handshake` result and checks it against what the config says.
    /// - Parameters:
    ///   - result: The answer's `result`.
    ///   - platforms: The channel's `platforms:` (the handshake must declare exactly these).
    ///   - configKeys: The keys of the channel's `config:` (each must be one the plugin accepts).
    static func handshake(_ result: JSONValue, platforms: [String], configKeys: [String]) -> Result<
        ExecHandshake, ExecProtocolError
    > {
        func refuse(_ message: String) -> Result<ExecHandshake, ExecProtocolError> {
            .failure(ExecProtocolError(code: .handshake, message: message))
        }
        guard let v = result["protocol"]?.intValue else { return refuse("the handshake needs an integer \"protocol\"") }
        guard v == version else { return refuse("the plugin speaks protocol \(v); this Herald speaks \(version)") }
        guard let list = result["platforms"]?.arrayValue else {
            return refuse("the handshake needs a \"platforms\" list")
        }
        var declared: [ExecHandshake.Platform] = []
        for p in list {
            guard let name = p["name"]?.stringValue ?? p.stringValue else {
                return refuse("each platform needs a string \"name\"")
            }
            guard let fields = strings(p["secretFields"]) else {
                return refuse("secretFields of platform \(name) must be a list of strings")
            }
            declared.append(ExecHandshake.Platform(name: name, secretFields: fields))
        }
        let names = Set(declared.map(\.name))
        if names != Set(platforms) || names.count != declared.count {
            return refuse(
                "the plugin declares platforms [\(declared.map(\.name).joined(separator: ", "))] but the config lists "
                    + "platforms: [\(platforms.joined(separator: ", "))]; they must be the same")
        }
        guard let keys = strings(result["configKeys"]), let secretKeys = strings(result["secretConfigKeys"]) else {
            return refuse("configKeys and secretConfigKeys must be lists of strings")
        }
        for key in configKeys where !keys.contains(key) {
            return refuse(
                "unknown key '\(key)' under config: (the plugin accepts: \(keys.sorted().joined(separator: ", ")))")
        }
        return .success(
            ExecHandshake(version: v, platforms: declared, configKeys: keys, secretConfigKeys: secretKeys))
    }

    /// A list of strings, an absent value as empty; nil when it is something else.
    static func strings(_ value: JSONValue?) -> Set<String>? {
        guard let value, !value.isNull else { return [] }
        guard let items = value.arrayValue else { return nil }
        var out: Set<String> = []
        for i in items {
            guard let s = i.stringValue else { return nil }
            out.insert(s)
        }
        return out
    }
}
