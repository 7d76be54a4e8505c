/// How a notification id is stored when ids are unique per namespace.
///
/// A client's id (`deploy-42`) is stored as it is, unless another namespace's notification already
/// holds it; then it is stored as the id, U+001F (the unit separator, which no client id may
/// contain) and the namespace (`deploy-42␟team-b`). The stored form is the notification's
/// ``HeraldNotification/id`` inside Herald (its deliveries, events, and what channels and apps are
/// sent); every answer to the client that sent it shows the client's own id (``publicID(of:)``).
public enum NotificationKey {
    /// U+001F, between the client's id and the namespace in a scoped key.
    public static let separator: Character = "\u{1F}"

    /// The key of `id` in `namespace` when the plain id is taken by another namespace.
    public static func scoped(_ id: String, namespace: String) -> String {
        id + String(separator) + namespace
    }

    /// The client's id of a stored key: the key itself, or the part before the separator.
    public static func publicID(of key: String) -> String {
        guard let i = key.firstIndex(of: separator) else { return key }
        return String(key[..<i])
    }

    /// Whether `key` is a scoped key (an id another namespace held first).
    public static func isScoped(_ key: String) -> Bool { key.contains(separator) }
}
