import ChannelAPI
import Foundation

/// Why no access token could be had.
public enum FCMTokenError: Error, Sendable, Equatable {
    /// The credentials were refused (4xx from the token endpoint, or signing failed): fail the deliveries.
    case rejected(status: Int?, reason: String)
    /// The token endpoint could not be reached or answered 5xx: retry the deliveries.
    case unavailable(status: Int?, reason: String, retryAfter: Duration?)
}

/// Hands out the service account's access token: from memory, else from the channel state store
/// (shared by every `herald` process on the same database), else freshly minted. Concurrent callers
/// share one token request.
public actor FCMTokenProvider {
    let account: FCMServiceAccount
    /// The channel's context: its HTTP transport, clock and state store (where the token is shared).
    let context: ChannelContext
    /// The channel's logger, which also redacts the account's private key.
    let logger: ChannelLogger
    private var cached: FCMAccessToken?
    private var inFlight: Task<Result<FCMAccessToken, FCMTokenError>, Never>?
    /// How many token requests this provider made (for tests and diagnostics).
    public private(set) var requestsMade = 0

    /// Creates a provider.
    public init(account: FCMServiceAccount, context: ChannelContext) {
        self.account = account
        self.context = context
        self.logger = context.logger.withSecrets([account.privateKeyPEM])
    }

    /// A usable token. `rejecting` is a token the provider just refused (401): if it is still the
    /// current one it is dropped and a new one minted; if another caller already replaced it, the
    /// replacement is returned.
    public func token(rejecting: String? = nil) async -> Result<FCMAccessToken, FCMTokenError> {
        let now = context.clock.now()
        if let rejected = rejecting {
            if cached?.value == rejected { cached = nil }
            if let stored = storedToken(), stored.value == rejected { clearStored(rejected) }
        }
        if let t = cached, t.isUsable(at: now) { return .success(t) }
        if let stored = storedToken(), stored.isUsable(at: now), stored.value != rejecting {
            cached = stored
            return .success(stored)
        }
        if let task = inFlight { return await task.value }
        let task = Task { await self.mint() }
        inFlight = task
        let result = await task.value
        inFlight = nil
        if case .success(let t) = result { cached = t }
        return result
    }

    private func storedToken() -> FCMAccessToken? {
        guard let json = try? context.state.json(forKey: account.cacheKey) else { return nil }
        return FCMAccessToken(stateJSON: json)
    }

    private func clearStored(_ value: String) {
        _ = try? context.state.update(account.cacheKey) { old -> (newValue: [UInt8]?, result: Void) in
            let current = old.flatMap { try? JSONValue.parse($0) }.flatMap { FCMAccessToken(stateJSON: $0) }
            return (current?.value == value ? nil : old, ())
        }
    }

    private func mint() async -> Result<FCMAccessToken, FCMTokenError> {
        requestsMade += 1
        let now = context.clock.now()
        let assertion: String
        do {
            assertion = try FCMAssertion.make(for: account, now: now)
        } catch {
            return .failure(.rejected(status: nil, reason: "signing the OAuth assertion failed: \(error.message)"))
        }
        let request = HTTPRequest(
            method: "POST", url: account.tokenURI,
            headers: [
                HTTPHeader("content-type", "application/x-www-form-urlencoded"),
                HTTPHeader("accept", "application/json"),
            ],
            body: FCMAssertion.tokenRequestBody(assertion: assertion), timeout: .seconds(30))
        let response: HTTPResponse
        do {
            response = try await context.http.send(request)
        } catch {
            logger.warning("token endpoint unreachable", ["error": error.description])
            return .failure(.unavailable(status: nil, reason: "token endpoint: \(error.description)", retryAfter: nil))
        }
        switch FCMTokenResponse.classify(
            status: response.status, body: response.body, retryAfter: response.header("retry-after"),
            now: context.clock.now())
        {
        case .token(let token):
            do {
                try context.state.setJSON(token.stateJSON, forKey: account.cacheKey)
            } catch {
                logger.warning("could not keep the access token in the channel state", ["error": "\(error)"])
            }
            logger.debug("access token minted", ["expiresAt": "\(token.expiresAt.secondsSince1970)"])
            return .success(token)
        case .rejected(let status, let reason):
            logger.error("service account credentials rejected", ["status": "\(status)", "reason": reason])
            return .failure(.rejected(status: status, reason: reason))
        case .unavailable(let status, let reason, let after):
            logger.warning("token endpoint unavailable", ["reason": reason])
            return .failure(.unavailable(status: status, reason: reason, retryAfter: after))
        }
    }
}
