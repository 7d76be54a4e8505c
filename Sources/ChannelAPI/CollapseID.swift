/// The collapse-id rule shared by every channel (contract §4).
public enum CollapseID {
    /// Cuts `text` to at most `maxBytes` UTF-8 bytes without splitting a character's encoding.
    public static func truncate(_ text: String, maxBytes: Int) -> String {
        guard text.utf8.count > maxBytes else { return text }
        var out = String.UnicodeScalarView()
        var used = 0
        for scalar in text.unicodeScalars {
            let n = String(scalar).utf8.count
            if used + n > maxBytes { break }
            out.append(scalar)
            used += n
        }
        return String(out)
    }
}
