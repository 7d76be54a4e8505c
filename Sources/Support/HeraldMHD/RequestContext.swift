import CMicroHTTPD
import HeraldSync

/// The state of one request across libmicrohttpd's calls (its `con_cls`).
final class RequestContext: @unchecked Sendable {
    enum State { case receiving, handling, answered }
    let method: String
    let path: String
    var headers: [String: String] = [:]
    var query: [String: String] = [:]
    var body: [UInt8] = []
    var received = 0
    var tooLarge = false
    /// Answer with `Connection: close` (a rejection, or a reserve connection).
    var closeAfter = false
    var state = State.receiving
    /// Set by the handler's task (or by ``MicroHTTPServer/stop(grace:)``), read on the connection's
    /// thread after the resume; `resumed` makes sure the connection is resumed once.
    let response = Locked<(response: ServerResponse?, resumed: Bool)>((nil, false))
    /// The suspended connection (bit pattern), set before the handler starts.
    var connection = 0

    /// Hands the answer over and resumes the connection, unless that was done already.
    func answer(_ response: ServerResponse) {
        let resume = self.response.withLock { r -> Bool in
            if r.resumed { return false }
            r = (response, true)
            return true
        }
        if resume { MHD_resume_connection(OpaquePointer(bitPattern: connection)) }
    }

    init(method: String, path: String) {
        self.method = method
        self.path = path
    }
}
