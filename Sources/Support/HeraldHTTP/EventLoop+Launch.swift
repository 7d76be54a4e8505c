import CCurl
import CHeraldShims
import ChannelAPI

/// Starting transfers (loop thread): a pooled easy handle configured for a request and added to the multi handle.
extension EventLoop {
    /// Starts a single request, or resumes its caller with the reason it could not start.
    func begin(_ job: Job) {
        if job.token.isCancelled {
            job.continuation.resume(returning: .failure(Self.cancelledError))
            return
        }
        if let failure = launch(job.request, job.headerList, job.host, .single(job.token, job.continuation)) {
            job.continuation.resume(returning: .failure(failure))
        }
    }

    /// Configures a pooled easy handle for `request` and adds it to the multi handle, or queues it while
    /// its host has no free stream. Returns the error when the transfer could not start (then `completion`
    /// is not called).
    func launch(
        _ request: HTTPRequest, _ headerList: HeaderList, _ host: String, _ completion: Completion,
        parking: Bool = true
    ) -> HTTPError? {
        if parking, scheduler.mustWait(host) {
            parkedCount.add(1, ordering: .relaxed)
            scheduler.enqueue(
                ParkedRequest(request: request, headerList: headerList, host: host, completion: completion), host: host)
            return nil
        }
        guard let easy = pool.popLast() ?? EasyHandle() else {
            return HTTPError(.transport, "curl_easy_init failed")
        }
        curl_easy_reset(easy.handle)
        easy.errorBuffer.pointee = 0
        let transfer = Transfer(
            completion: completion, easy: easy, host: host,
            limit: max(0, request.maxResponseBytes ?? settings.maxResponseBytes))
        if let error = CurlOptions.configure(
            transfer, request, headerList, settings: settings, emptyBody: emptyBody, closeHook: closeHook)
        {
            transfer.releaseHeaders()
            pool.append(easy)
            return error
        }
        let code = curl_multi_add_handle(multi, easy.handle)
        if code != CURLM_OK {
            transfer.releaseHeaders()
            pool.append(easy)
            let text = String(cString: curl_multi_strerror(code))
            return HTTPError(.transport, text, curlCode: Int(code.rawValue))
        }
        if case .single(let token, _) = completion { transfers[ObjectIdentifier(token)] = transfer }
        byEasy[easy.handle] = transfer
        scheduler.started(host)
        return nil
    }
}
