/// A piece of styled text in a Telegram HTML message.
///
/// Messages are built from spans rather than HTML strings so that length checks and truncation work
/// on the visible text and can never cut through a tag or an entity: tags and escapes are added only
/// when the spans are rendered.
public struct TelegramSpan: Sendable, Equatable {
    /// How a span is marked up.
    public enum Style: Sendable, Equatable {
        /// Plain text.
        case plain
        /// `<b>…</b>`.
        case bold
        /// `<i>…</i>`.
        case italic
        /// `<code>…</code>`.
        case code
    }

    /// The visible text (not escaped).
    public var text: String
    /// The markup.
    public var style: Style

    /// Creates a span.
    public init(_ text: String, _ style: Style = .plain) {
        self.text = text
        self.style = style
    }

    /// The span as Telegram HTML: the escaped text inside its tags.
    public var html: String {
        let escaped = TelegramText.escape(text)
        switch style {
        case .plain: return escaped
        case .bold: return "<b>\(escaped)</b>"
        case .italic: return "<i>\(escaped)</i>"
        case .code: return "<code>\(escaped)</code>"
        }
    }
}

/// Pure helpers for Telegram's HTML parse mode: escaping, measuring and truncating.
///
/// **Measure.** Telegram limits `text` to 4096 characters *after entity parsing* and counts entity
/// offsets in UTF-16 code units. Herald measures the visible text (tags removed, `&lt;` counted as
/// one `<`) in UTF-16 code units, which is never less than what Telegram counts, so a message Herald
/// accepts is never refused as too long.
public enum TelegramText {
    /// The `text` limit of `sendMessage` and `editMessageText`.
    public static let maxLength = 4096

    /// The marker appended to cut text: an ellipsis, then `(truncated)` in italics on its own line.
    public static let truncationMarker: [TelegramSpan] = [TelegramSpan("…"), TelegramSpan("\n(truncated)", .italic)]

    /// Escapes `&`, `<` and `>` (in that order) as `&amp;`, `&lt;`, `&gt;`. Text that already looks
    /// escaped is escaped again: `&amp;` becomes `&amp;amp;` and shows as `&amp;`, as the user wrote it.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// The visible length of spans in UTF-16 code units (the measure described above).
    public static func length(_ spans: [TelegramSpan]) -> Int {
        spans.reduce(0) { $0 + $1.text.utf16.count }
    }

    /// Renders spans as Telegram HTML.
    public static func render(_ spans: [TelegramSpan]) -> String {
        spans.map(\.html).joined()
    }

    /// The longest prefix of `text` that fits in `limit` UTF-16 code units without splitting a
    /// character (grapheme cluster), so emoji and surrogate pairs stay whole.
    public static func prefix(_ text: String, utf16Limit limit: Int) -> String {
        guard text.utf16.count > limit else { return text }
        var used = 0
        var end = text.startIndex
        for index in text.indices {
            let next = text.index(after: index)
            let size = text[index..<next].utf16.count
            if used + size > limit { break }
            used += size
            end = next
        }
        return String(text[..<end])
    }

    /// Cuts spans to at most `limit` UTF-16 code units of visible text. When something is cut, the
    /// text ends with ``truncationMarker`` (counted in the limit); trailing whitespace before the
    /// marker is dropped. Tags are always closed and escapes are never split, because escaping happens
    /// after cutting.
    public static func truncate(_ spans: [TelegramSpan], limit: Int = maxLength) -> (
        spans: [TelegramSpan], truncated: Bool
    ) {
        guard length(spans) > limit else { return (spans, false) }
        let budget = max(0, limit - length(truncationMarker))
        var out: [TelegramSpan] = []
        var used = 0
        for span in spans {
            let size = span.text.utf16.count
            if used + size <= budget {
                out.append(span)
                used += size
                continue
            }
            let cut = prefix(span.text, utf16Limit: budget - used)
            if !cut.isEmpty { out.append(TelegramSpan(cut, span.style)) }
            break
        }
        // Drop trailing whitespace so the ellipsis sits right after the last word.
        while let last = out.last {
            let trimmed = String(last.text.reversed().drop(while: { $0.isWhitespace }).reversed())
            if trimmed.isEmpty {
                out.removeLast()
                continue
            }
            out[out.count - 1].text = trimmed
            break
        }
        return (out + truncationMarker, true)
    }
}
