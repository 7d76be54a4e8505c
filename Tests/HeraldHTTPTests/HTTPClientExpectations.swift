// Helpers shared by the HTTPClient suites (HTTPClientTests, HTTPClientFailureTests).

import ChannelAPI
import HeraldHTTP
import Testing

/// Runs `body` and returns the ``HTTPError`` it throws, recording an issue when it succeeds instead.
func httpError(
    _ body: () async throws -> HTTPResponse, sourceLocation: SourceLocation = #_sourceLocation
) async -> HTTPError? {
    do {
        let response = try await body()
        Issue.record("expected an error, got status \(response.status)", sourceLocation: sourceLocation)
        return nil
    } catch let error as HTTPError {
        return error
    } catch {
        Issue.record("expected an HTTPError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Sends `url` on a task of its own, which expects an error (the tests cancel these or shut the client down).
func failingSend(
    _ client: HTTPClient, _ url: String, sourceLocation: SourceLocation = #_sourceLocation
) -> Task<HTTPError?, Never> {
    Task { await httpError({ try await client.send(HTTPRequest(url: url)) }, sourceLocation: sourceLocation) }
}

/// Polls `condition` until it holds or `timeout` passes.
func eventually(
    timeout: Duration = .seconds(20), _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return false
}
