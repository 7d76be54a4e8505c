import ChannelAPI
import Foundation
import HeraldCrypto

/// What one button's `callback_data` stands for.
struct TelegramCallbackRecord: Sendable, Equatable {
    var notificationId: String
    var actionId: String
    var actionTitle: String
    var destructive: Bool
    /// The chat the button was sent to (numeric once Telegram answered).
    var chat: String
    /// The message carrying the button, once known.
    var messageId: Int?
    /// Milliseconds since 1970 after which the button approves nothing.
    var expiresAt: Int64
    /// The keyboard (message) this button belongs to.
    var group: String
    /// The registered device the chat belongs to; nil for a static chat.
    var deviceId: String?

    var json: JSONValue {
        var o: [String: JSONValue] = [
            "n": .string(notificationId), "a": .string(actionId), "t": .string(actionTitle), "x": .bool(destructive),
            "c": .string(chat), "e": .number(Double(expiresAt)), "g": .string(group),
        ]
        if let messageId { o["m"] = .number(Double(messageId)) }
        if let deviceId { o["d"] = .string(deviceId) }
        return .object(o)
    }

    init(
        notificationId: String, actionId: String, actionTitle: String, destructive: Bool, chat: String,
        messageId: Int?, expiresAt: Int64, group: String, deviceId: String?
    ) {
        self.notificationId = notificationId
        self.actionId = actionId
        self.actionTitle = actionTitle
        self.destructive = destructive
        self.chat = chat
        self.messageId = messageId
        self.expiresAt = expiresAt
        self.group = group
        self.deviceId = deviceId
    }

    init?(bytes: [UInt8]) {
        guard let o = (try? JSONValue.parse(bytes))?.objectValue, let n = o["n"]?.stringValue,
            let a = o["a"]?.stringValue, let c = o["c"]?.stringValue, let e = o["e"]?.numberValue,
            let g = o["g"]?.stringValue
        else { return nil }
        self.init(
            notificationId: n, actionId: a, actionTitle: o["t"]?.stringValue ?? a,
            destructive: o["x"]?.boolValue ?? false,
            chat: c, messageId: o["m"]?.intValue, expiresAt: Int64(clamping: e), group: g, deviceId: o["d"]?.stringValue
        )
    }
}

/// The keyboard of one sent message: its text (to re-send with the outcome line), its button ids and
/// whether a button was already taken.
struct TelegramKeyboardRecord: Sendable, Equatable {
    var html: String
    var ids: [String]
    var done: Bool

    var json: JSONValue { ["h": .string(html), "ids": .array(ids.map { .string($0) }), "done": .bool(done)] }

    init(html: String, ids: [String], done: Bool) {
        self.html = html
        self.ids = ids
        self.done = done
    }

    init?(bytes: [UInt8]) {
        guard let o = (try? JSONValue.parse(bytes))?.objectValue, let h = o["h"]?.stringValue else { return nil }
        self.init(
            html: h, ids: o["ids"]?.arrayValue?.compactMap(\.stringValue) ?? [], done: o["done"]?.boolValue ?? false)
    }
}

/// The callback mapping kept in the channel's state store.
///
/// Keys: `cb:<callback id>` (one per button: notification id, action id, chat id, message id once
/// known, expiry), `kb:<group>` (one per sent message: its HTML and button ids; claiming it is the
/// atomic "first press wins" step), `gc:<minute>` (keys to delete once that minute has begun) and
/// `gc:cursor` (the last minute collected).
struct TelegramCallbackStore: Sendable {
    let state: any ChannelStateStore
    let random: any RandomSource
    let ttl: Duration

    static let minuteMs: Int64 = 60_000

    /// A fresh 12-character base64url id (9 bytes). The bytes are SHA-256 of 16 random bytes and the
    /// button's identity, so ids stay unique even with a deterministic test random source.
    func newID(material: String, attempt: Int) -> String {
        let digest = SHA256.hash(random.bytes(16) + Array("\(material)|\(attempt)".utf8))
        return Base64.urlEncode(Array(digest.prefix(9)))
    }

    /// Stores one record per callback action and returns the buttons (callback buttons carry the ids;
    /// URL actions become URL buttons), the keyboard's group id and the callback ids.
    func prepare(
        notification: HeraldNotification, chat: TelegramChatID, deviceId: String?, deliveryId: String, now: Date
    ) throws -> (buttons: [TelegramButton], group: String, ids: [String]) {
        let expires = now.millisecondsSince1970 + ttl.milliseconds
        let group = newID(material: "group|\(notification.id)|\(chat.text)|\(deliveryId)", attempt: 0)
        var buttons: [TelegramButton] = []
        var ids: [String] = []
        for action in notification.actions {
            if let url = action.url {
                guard TelegramMessage.isButtonURL(url) else { continue }
                buttons.append(TelegramButton(text: action.title, kind: .url(url), destructive: action.destructive))
                continue
            }
            let record = TelegramCallbackRecord(
                notificationId: notification.id, actionId: action.id, actionTitle: action.title,
                destructive: action.destructive, chat: chat.text, messageId: nil, expiresAt: expires, group: group,
                deviceId: deviceId)
            var stored: String?
            for attempt in 0..<8 {
                let id = newID(material: "\(group)|\(action.id)", attempt: attempt)
                let inserted = try state.update("cb:" + id) { old in
                    old == nil ? (record.json.canonicalBytes, true) : (old, false)
                }
                if inserted {
                    stored = id
                    break
                }
            }
            guard let id = stored else { continue }
            ids.append(id)
            buttons.append(TelegramButton(text: action.title, kind: .callback(id), destructive: action.destructive))
        }
        if !ids.isEmpty {
            try schedule(ids.map { "cb:" + $0 } + ["kb:" + group], expiresAt: expires)
        }
        return (buttons, group, ids)
    }

    /// Records the sent message: its id and numeric chat in every button record, its HTML in the
    /// keyboard record.
    func attach(group: String, ids: [String], messageId: Int?, chat: TelegramChatID?, html: String) throws {
        guard !ids.isEmpty else { return }
        for id in ids {
            try state.update("cb:" + id) { old -> ([UInt8]?, Void) in
                guard let old, var record = TelegramCallbackRecord(bytes: old) else { return (old, ()) }
                record.messageId = messageId
                if let chat { record.chat = chat.text }
                return (record.json.canonicalBytes, ())
            }
        }
        try state.setJSON(TelegramKeyboardRecord(html: html, ids: ids, done: false).json, forKey: "kb:" + group)
    }

    /// The record behind `callback_data`, or nil when unknown.
    func lookup(_ data: String) throws -> TelegramCallbackRecord? {
        guard data.utf8.count <= 64, !data.isEmpty, let bytes = try state.value(forKey: "cb:" + data) else {
            return nil
        }
        return TelegramCallbackRecord(bytes: bytes)
    }

    /// Marks a keyboard taken. Returns its record the first time, nil when it was already taken or is
    /// unknown (atomic across processes).
    func claim(group: String) throws -> TelegramKeyboardRecord? {
        try state.update("kb:" + group) { old -> ([UInt8]?, TelegramKeyboardRecord?) in
            guard let old, var record = TelegramKeyboardRecord(bytes: old), !record.done else { return (old, nil) }
            record.done = true
            return (record.json.canonicalBytes, record)
        }
    }

    /// Deletes a keyboard and its button records.
    func remove(group: String, ids: [String]) throws {
        for id in ids { try state.setValue(nil, forKey: "cb:" + id) }
        try state.setValue(nil, forKey: "kb:" + group)
    }

    /// Lists keys for deletion once their expiry has passed. Buckets are per minute and hold
    /// newline-separated keys, so scheduling is an append (no parse of the bucket).
    func schedule(_ keys: [String], expiresAt: Int64) throws {
        let minute = expiresAt / Self.minuteMs + 1
        let line = Array((keys.joined(separator: "\n") + "\n").utf8)
        try state.update("gc:\(minute)") { old -> ([UInt8]?, Void) in ((old ?? []) + line, ()) }
    }

    /// Deletes expired records: every `gc:<minute>` bucket whose minute has begun, walking at most one
    /// day of buckets per call (a long pause is caught up over later calls).
    func collectGarbage(now: Date) throws {
        let current = now.millisecondsSince1970 / Self.minuteMs
        let range: ClosedRange<Int64>? = try state.update("gc:cursor") { old in
            let last = old.flatMap { Int64(String(decoding: $0, as: UTF8.self)) } ?? (current - 1)
            guard last < current else { return (old, nil) }
            let end = min(current, last + 1440)
            return (Array(String(end).utf8), (last + 1)...end)
        }
        guard let range else { return }
        for minute in range {
            let key = "gc:\(minute)"
            guard let bytes = try state.value(forKey: key) else { continue }
            for k in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
                try state.setValue(nil, forKey: String(k))
            }
            try state.setValue(nil, forKey: key)
        }
    }
}
