import Foundation
import HeraldMHD
import Router

/// The one access check of every route (``RouteAccess``), and the per-token limits of streams and
/// long polls.
extension HeraldAPI {
    /// The caller of `request` under `access`: nil on an open route; otherwise the token
    /// (`Authorization: Bearer`, or `?token=` where the route accepts it), after the rate limit and
    /// a check that it has one of the route's scopes.
    func authorize(_ request: ServerRequest, access: RouteAccess, label: String) throws -> APIToken? {
        switch access.rule {
        case .open: return nil
        case .custom(let check):
            guard let token = try check(request, self) else { return nil }
            try rateLimit(token)
            return token
        case .scopes(let scopes, let query, let openWhen):
            if let openWhen, openWhen(settings.withLock({ $0.server })) { return nil }
            let token = try bearer(request, query: query)
            try rateLimit(token)
            guard !token.scopes.isDisjoint(with: scopes) else {
                throw APIError.forbidden(
                    "token \(token.name) lacks the scope \(scopes.sorted().joined(separator: " or ")) for \(label)")
            }
            return token
        }
    }

    /// The configured token the request's bearer token is (401 when none is sent or it is unknown).
    func bearer(_ request: ServerRequest, query: RouteAccess.QueryToken) throws -> APIToken {
        var bearer: String?
        if let header = request.header("authorization") {
            let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            if parts.count == 2, parts[0].lowercased() == "bearer" {
                bearer = parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        if bearer == nil, query == .accepted, let t = request.query["token"] { bearer = t }
        guard let bearer, !bearer.isEmpty else {
            throw APIError.unauthorized(
                query == .refused && request.query["token"] != nil
                    ? "a token in the query is only accepted on /v1/events; send Authorization: Bearer"
                    : "send Authorization: Bearer <token>")
        }
        let auth = settings.withLock { $0.authenticator }
        guard let token = auth.authenticate(bearer) else { throw APIError.unauthorized("unknown token") }
        return token
    }

    /// 429 with `Retry-After` when `token` is over its rate limit.
    func rateLimit(_ token: APIToken) throws {
        let limiter = settings.withLock { $0.limiter }
        if let wait = limiter.take(token.name, now: now()) {
            throw APIError(
                429, "rate_limited", "token \(token.name) is over its rate limit; retry in \(wait) s",
                headers: [("Retry-After", String(wait))])
        }
    }

    /// Refuses a write into a namespace the token does not cover (403).
    func requireCovers(_ token: APIToken, _ namespace: String) throws {
        guard token.covers(namespace) else {
            throw APIError.forbidden("token \(token.name) does not cover namespace \(namespace)")
        }
    }

    /// Takes one of the token's stream or long-poll slots, or throws 429 when it holds its limit.
    func takeSlot(_ token: APIToken, stream: Bool) throws {
        let limit = settings.withLock { stream ? $0.server.maxStreamsPerToken : $0.server.maxLongPollsPerToken }
        let taken = tokenSlots.withLock { slots -> Bool in
            let held = (stream ? slots.streams[token.name] : slots.polls[token.name]) ?? 0
            guard held < limit else { return false }
            if stream { slots.streams[token.name] = held + 1 } else { slots.polls[token.name] = held + 1 }
            return true
        }
        guard taken else {
            throw APIError(
                429, stream ? "too_many_streams" : "too_many_long_polls",
                stream
                    ? "token \(token.name) has max-streams-per-token (\(limit)) event streams open"
                    : "token \(token.name) has max-long-polls-per-token (\(limit)) long polls waiting",
                headers: [("Retry-After", "5"), ("Connection", "close")])
        }
    }

    /// Gives a slot of ``takeSlot(_:stream:)`` back.
    func releaseSlot(_ token: APIToken, stream: Bool) {
        tokenSlots.withLock { slots in
            if stream {
                let left = (slots.streams[token.name] ?? 1) - 1
                slots.streams[token.name] = left > 0 ? left : nil
            } else {
                let left = (slots.polls[token.name] ?? 1) - 1
                slots.polls[token.name] = left > 0 ? left : nil
            }
        }
    }
}
