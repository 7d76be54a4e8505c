import ChannelAPI

/// The thin Bot API caller: `POST {api}/bot<token>/<method>` with a JSON body.
///
/// The URL contains the bot token, so it is never logged, and transport error texts are scrubbed of
/// the token before they leave this type.
struct TelegramBotAPI: Sendable {
    let http: any HTTPTransport
    let api: String
    let token: String

    /// Why a call produced no HTTP response.
    struct TransportError: Error, Sendable {
        var message: String
        var cancelled: Bool
    }

    func url(_ method: String) -> String { "\(api)/bot\(token)/\(method)" }

    func call(_ method: String, _ body: JSONValue, timeout: Duration? = nil) async -> Result<
        TelegramResponse, TransportError
    > {
        let request = HTTPRequest(
            method: "POST", url: url(method), headers: [HTTPHeader("content-type", "application/json")],
            body: body.canonicalBytes, timeout: timeout)
        do {
            let response = try await http.send(request)
            return .success(
                TelegramResponse(
                    status: response.status, body: response.body, retryAfterHeader: response.header("retry-after")))
        } catch {
            let text = Redaction.scrub("\(error.code.rawValue): \(error.message)", secrets: [token])
            return .failure(TransportError(message: text, cancelled: error.code == .cancelled))
        }
    }
}
