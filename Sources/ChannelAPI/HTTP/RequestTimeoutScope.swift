/// A per-request time limit that applies to every request sent from a task and its child tasks.
///
/// The router runs a channel's `deliver` inside a scope with the channel's `timeout`, so that each
/// HTTP request the channel makes gets that budget of its own (`CURLOPT_TIMEOUT_MS`), however many
/// requests the call makes and however long it runs as a whole. A request's own
/// ``HTTPRequest/timeout`` still applies when it is shorter.
///
/// ```swift
/// let results = await RequestTimeoutScope.$limit.withValue(.seconds(5)) {
///     await channel.deliver(request)
/// }
/// ```
///
/// Tasks created with `Task { }` inherit the scope; detached tasks do not.
public enum RequestTimeoutScope {
    /// The longest total time one request may take in the current task; `nil` when no scope is set.
    @TaskLocal public static var limit: Duration?

    /// `request` with the scope's limit applied: the shorter of its own timeout (or, without one,
    /// the scope's limit) and the scope's limit.
    /// - Parameter request: The request.
    /// - Returns: The request to send.
    public static func applied(to request: HTTPRequest) -> HTTPRequest {
        guard let limit else { return request }
        var limited = request
        limited.timeout = min(request.timeout ?? limit, limit)
        return limited
    }
}
