/// The HTTP seam between a channel and the network: what a channel needs to send requests, and
/// nothing of how they are sent.
///
/// The router lends its transport through ``ChannelContext/http``: in production HeraldHTTP's
/// `HTTPClient` (libcurl multi, HTTP/2), in tests an in-process fake such as RouterTesting's
/// `ScriptedTransport`. A channel imports only ChannelAPI to talk HTTP.
///
/// Rules every transport keeps:
/// - Any HTTP status is a response, not an error; an ``HTTPError`` means no response arrived
///   (`timeout`, `connect-failed`, `tls`, `blocked-address`, …, see ``HTTPError/Code``).
/// - ``HTTPRequest/addressPolicy`` is enforced on the address actually connected to:
///   ``AddressPolicy/publicOnly`` requests never reach loopback or private space, and fail with
///   ``HTTPError/Code/blockedAddress`` (permanent for that URL).
/// - Inside a ``RequestTimeoutScope`` every request's timeout is at most the scope's limit
///   (``RequestTimeoutScope/applied(to:)``).
/// - Cancelling the calling task aborts the request(s) with ``HTTPError/Code/cancelled``.
public protocol HTTPTransport: Sendable {
    /// Sends one request and waits for its response.
    /// - Throws: An ``HTTPError`` when no response arrived.
    func send(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse

    /// Sends many requests with at most `maxInFlight` in flight at once and waits for all of them.
    /// - Returns: One result per request, in the order of `requests`.
    func send(all requests: [HTTPRequest], maxInFlight: Int) async -> [Result<HTTPResponse, HTTPError>]
}
