import ChannelAPI

/// The batch bookkeeping every HTTP channel shares: prepare a request per target (or a result when
/// there is nothing to send), send them all as one batch of the transport, classify each answer,
/// and report every target left without a result as "not attempted" (a `retry`).
///
/// ```swift
/// await DeliveryBatch.deliver(request.targets, over: http, maxInFlight: 32) { target in
///     guard let r = publishRequest(to: target) else { return .result(.failed(target, reason: "no topic")) }
///     return .send(r, ())
/// } classify: { target, _, answer in
///     classify(answer, target)
/// }
/// ```
public enum DeliveryBatch {
    /// What preparing one target came to.
    public enum Preparation<Context> {
        /// Send this request; `Context` is what classifying its answer needs.
        case send(HTTPRequest, Context)
        /// Nothing to send: this is the target's result (a payload refused locally, a missing token).
        case result(DeliveryResult)
    }

    /// Prepares every target, sends the requests as one batch (at most `maxInFlight` in flight) and
    /// classifies the answers. Returns one result per target, in the order of `targets`.
    public static func deliver<Context>(
        _ targets: [DeliveryTarget], over http: any HTTPTransport, maxInFlight: Int,
        prepare: (DeliveryTarget) -> Preparation<Context>,
        classify: (DeliveryTarget, Context, Result<HTTPResponse, HTTPError>) -> DeliveryResult
    ) async -> [DeliveryResult] {
        var results = [DeliveryResult?](repeating: nil, count: targets.count)
        var sending: [(index: Int, request: HTTPRequest, context: Context)] = []
        sending.reserveCapacity(targets.count)
        for (i, target) in targets.enumerated() {
            switch prepare(target) {
            case .send(let request, let context): sending.append((i, request, context))
            case .result(let result): results[i] = result
            }
        }
        if !sending.isEmpty {
            let answers = await http.send(all: sending.map(\.request), maxInFlight: max(1, maxInFlight))
            for (item, answer) in zip(sending, answers) {
                results[item.index] = classify(targets[item.index], item.context, answer)
            }
        }
        return complete(targets, results)
    }

    /// One result per target: `results[i]` for `targets[i]`, or a `retry` "not attempted" where
    /// there is none (a request that was never sent, an answer that never came).
    public static func complete(_ targets: [DeliveryTarget], _ results: [DeliveryResult?]) -> [DeliveryResult] {
        targets.indices.map { i in
            (i < results.count ? results[i] : nil) ?? .retry(targets[i], reason: "not attempted")
        }
    }
}

/// The "renew the credential once and resend what it rejected" loop of channels that hold a
/// short-lived credential (an APNs provider token, an FCM access token).
///
/// `send` sends a batch with a credential and says, per item, whether it is done or was rejected
/// for the credential (`ExpiredProviderToken`, a 401). The rejected items are sent once more after
/// `renew`; rejected again, or when renewing fails, `giveUp` turns each into its output.
public enum CredentialRenewal {
    /// What one item's answer came to.
    public enum Answer<Output, Rejection> {
        /// Final.
        case done(Output)
        /// Rejected for the credential; worth one resend with a renewed one.
        case rejected(Rejection)
    }

    /// Why an item is given up.
    public enum GiveUp<Failure: Error> {
        /// The renewed credential was rejected too.
        case rejectedAgain
        /// The credential could not be renewed.
        case renewalFailed(Failure)
    }

    /// Sends `items` with `credential`, renewing it at most once. Returns one output per item (in
    /// the order answers arrive, rejected-then-resent items last).
    @inlinable
    public static func send<Item, Credential, Output, Rejection, Failure: Error>(
        _ items: [Item], with credential: Credential,
        send: ([Item], Credential) async -> [(Item, Answer<Output, Rejection>)],
        renew: (Credential) async -> Result<Credential, Failure>,
        giveUp: (Item, Rejection, GiveUp<Failure>) -> Output
    ) async -> [Output] {
        var out: [Output] = []
        out.reserveCapacity(items.count)
        var pending = items
        var current = credential
        var renewed = false
        while !pending.isEmpty {
            var rejected: [(Item, Rejection)] = []
            for (item, answer) in await send(pending, current) {
                switch answer {
                case .done(let output): out.append(output)
                case .rejected(let why): rejected.append((item, why))
                }
            }
            pending = []
            guard !rejected.isEmpty else { break }
            if renewed {
                out += rejected.map { giveUp($0.0, $0.1, .rejectedAgain) }
                break
            }
            renewed = true
            switch await renew(current) {
            case .success(let fresh):
                current = fresh
                pending = rejected.map(\.0)
            case .failure(let error):
                out += rejected.map { giveUp($0.0, $0.1, .renewalFailed(error)) }
            }
        }
        return out
    }
}
