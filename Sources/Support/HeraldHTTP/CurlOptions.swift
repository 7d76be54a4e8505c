import CCurl
import CHeraldShims
import ChannelAPI

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The libcurl options of one transfer: URL, HTTP version, timeouts, method and body, headers, the
/// response callbacks, the socket close hook, and the address checks of ``AddressPolicy/publicOnly``.
/// Stateless; called on the event loop's thread with a pooled easy handle just reset.
enum CurlOptions {
    /// libcurl's close-socket callback and the context it receives (the event loop, which uncorks the
    /// socket before closing it).
    struct SocketCloseHook {
        let function: @convention(c) (UnsafeMutableRawPointer?, curl_socket_t) -> Int32
        let context: UnsafeMutableRawPointer
    }

    /// libcurl's upload buffer per transfer: its least (16 kB).
    static let uploadBufferSize = 16 * 1024

    /// Sets every option of one transfer on its (reset) easy handle; returns an error when libcurl
    /// rejects one.
    /// - Parameters:
    ///   - settings: The loop's settings (CA file, timeouts, user agent).
    ///   - emptyBody: A NUL byte that `CURLOPT_POSTFIELDS` points at for an empty body (a null pointer
    ///     would make libcurl read the body from stdin); it outlives the transfer.
    ///   - closeHook: The close callback to install, when the loop corks sockets.
    static func configure(
        _ transfer: Transfer, _ request: HTTPRequest, _ headerList: HeaderList, settings: LoopSettings,
        emptyBody: UnsafeMutablePointer<CChar>, closeHook: SocketCloseHook?
    ) -> HTTPError? {
        let handle = transfer.easy.handle
        var failed: CURLcode = CURLE_OK
        func check(_ code: CURLcode) { if code != CURLE_OK && failed == CURLE_OK { failed = code } }
        func setLong(_ option: CURLoption, _ value: Int) { check(herald_curl_easy_setopt_long(handle, option, value)) }
        func setString(_ option: CURLoption, _ value: String) {
            value.withCString { check(herald_curl_easy_setopt_cstr(handle, option, $0)) }
        }

        check(herald_curl_easy_setopt_ptr(handle, CURLOPT_ERRORBUFFER, transfer.easy.errorBuffer))
        setString(CURLOPT_URL, request.url)
        setLong(CURLOPT_NOSIGNAL, 1)
        setLong(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        setLong(CURLOPT_PIPEWAIT, 1)
        // Redirects are never followed (also libcurl's default): a 3xx is an answer, not a new destination.
        setLong(CURLOPT_FOLLOWLOCATION, 0)
        // Peer and host verification are libcurl's defaults (restored by curl_easy_reset) and never changed.
        if let caFile = settings.caFile { setString(CURLOPT_CAINFO, caFile) }
        let timeout = request.timeout.map(Curl.milliseconds) ?? settings.defaultTimeoutMs
        setLong(CURLOPT_TIMEOUT_MS, timeout)
        setLong(CURLOPT_CONNECTTIMEOUT_MS, min(timeout, settings.connectTimeoutMs))
        setString(CURLOPT_USERAGENT, settings.userAgent)
        check(herald_curl_easy_setopt_off(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(transfer.limit)))
        // The upload buffer of each transfer in flight: push requests are a few kB, and libcurl's
        // default of 64 kB was most of the memory of a large fan-out's window of transfers. Larger
        // bodies still go through, in more turns. (The receive buffer keeps its size: libcurl
        // refuses to resize it once a reused handle has one.)
        setLong(CURLOPT_UPLOAD_BUFFERSIZE, Self.uploadBufferSize)

        // Headers: the list was built by the caller, off this thread.
        if !headerList.complete { failed = CURLE_OUT_OF_MEMORY }
        transfer.headerList = headerList
        check(herald_curl_easy_setopt_ptr(handle, CURLOPT_HTTPHEADER, headerList.list))

        // Method and body.
        let method = request.method
        // The usual method is already upper case; only others pay for `uppercased()`.
        let upper = method == "POST" || method == "GET" ? method : method.uppercased()
        let sendsBody: Bool
        switch upper {
        case "GET", "HEAD", "DELETE", "OPTIONS": sendsBody = !request.body.isEmpty
        default: sendsBody = true
        }
        if upper == "GET" && !sendsBody {
            setLong(CURLOPT_HTTPGET, 1)
        } else if upper == "HEAD" && !sendsBody {
            setLong(CURLOPT_NOBODY, 1)
        } else {
            if sendsBody {
                setLong(CURLOPT_POST, 1)
                check(herald_curl_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)))
                if request.body.isEmpty {
                    check(herald_curl_easy_setopt_ptr(handle, CURLOPT_POSTFIELDS, emptyBody))
                } else {
                    request.body.withUnsafeBytes { bytes in
                        check(
                            herald_curl_easy_setopt_ptr(
                                handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress)))
                    }
                }
            }
            if upper != "POST" { setString(CURLOPT_CUSTOMREQUEST, method) }
        }

        // Response callbacks; the transfer outlives them (it stays in `transfers` until finished).
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        check(
            herald_curl_easy_setopt_write(handle) { data, size, count, context in
                guard let context else { return 0 }
                let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
                let length = size * count
                guard length > 0, let data else { return length }
                return transfer.appendBody(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
            })
        check(herald_curl_easy_setopt_ptr(handle, CURLOPT_WRITEDATA, context))
        check(
            herald_curl_easy_setopt_header(handle) { data, size, count, context in
                let length = size * count
                guard let context, let data, length > 0 else { return length }
                let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
                transfer.appendHeaderLine(UnsafeRawBufferPointer(start: data, count: length))
                return length
            })
        check(herald_curl_easy_setopt_ptr(handle, CURLOPT_HEADERDATA, context))

        // Sockets: a connection's socket is corked once a transfer has finished on it (see EventLoop.finish
        // and CorkedSockets). The close callback is kept by the connection, which lives in this loop's multi
        // handle and dies with it; libcurl closes every connection socket through it.
        if let closeHook {
            check(herald_curl_easy_setopt_closesocket(handle, closeHook.function))
            check(herald_curl_easy_setopt_ptr(handle, CURLOPT_CLOSESOCKETDATA, closeHook.context))
        }

        if request.addressPolicy == .publicOnly { restrictAddresses(of: transfer, check) }

        if failed == CURLE_OK { return nil }
        let text = String(cString: curl_easy_strerror(failed))
        let code: HTTPError.Code = failed == CURLE_OUT_OF_MEMORY ? .transport : .invalidRequest
        return HTTPError(code, "could not configure the request: \(text)", curlCode: Int(failed.rawValue))
    }

    /// Lets `transfer` reach public addresses only (``AddressPolicy/publicOnly``): libcurl's open-socket
    /// callback refuses a resolved address before connecting to it, and the pre-request callback refuses a
    /// connection whose peer is not public before a request is sent on it (a reused connection, opened
    /// earlier for a request that was allowed to reach it, is never checked by the open-socket callback).
    static func restrictAddresses(of transfer: Transfer, _ check: (CURLcode) -> Void) {
        let handle = transfer.easy.handle
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        check(
            herald_curl_easy_setopt_opensocket(handle) { context, _, address in
                guard let context, let address else { return -1 }
                let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
                let (bytes, text) = CurlOptions.peer(address)
                if let why = AddressPolicy.refusal(for: bytes) {
                    transfer.blockedAddress = "\(text) (\(why))"
                    return -1  // CURL_SOCKET_BAD: libcurl tries the next address, or fails to connect
                }
                return socket(address.pointee.family, address.pointee.socktype, address.pointee.protocol)
            })
        check(herald_curl_easy_setopt_ptr(handle, CURLOPT_OPENSOCKETDATA, context))
        check(
            herald_curl_easy_setopt_prereq(handle) { context, primaryIP, _, _, _ in
                guard let context, let primaryIP else { return 1 }
                let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
                let ip = String(cString: primaryIP)
                if let why = AddressPolicy.refusal(forIP: ip) {
                    transfer.blockedAddress = "\(ip) (\(why))"
                    return 1  // CURL_PREREQFUNC_ABORT
                }
                return 0  // CURL_PREREQFUNC_OK
            })
        check(herald_curl_easy_setopt_ptr(handle, CURLOPT_PREREQDATA, context))
    }

    /// The address bytes (network order) and text of the socket address libcurl is about to connect to;
    /// no bytes for a family other than IPv4 and IPv6 (refused).
    private static func peer(_ address: UnsafeMutablePointer<curl_sockaddr>) -> (bytes: [UInt8], text: String) {
        guard let offset = MemoryLayout<curl_sockaddr>.offset(of: \curl_sockaddr.addr) else { return ([], "?") }
        // libcurl's storage behind `addr` is large enough for the family's sockaddr (`addrlen` bytes).
        let raw = UnsafeRawPointer(address) + offset
        let length = Int(address.pointee.addrlen)
        var bytes: [UInt8] = []
        switch address.pointee.family {
        case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
            var sin = raw.loadUnaligned(as: sockaddr_in.self)
            bytes = withUnsafeBytes(of: &sin.sin_addr) { Array($0) }
        case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
            var sin6 = raw.loadUnaligned(as: sockaddr_in6.self)
            bytes = withUnsafeBytes(of: &sin6.sin6_addr) { Array($0) }
        default:
            return ([], "an address of family \(address.pointee.family)")
        }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let text = bytes.withUnsafeBytes { src in
            inet_ntop(family, src.baseAddress, &buffer, socklen_t(buffer.count)) != nil
                ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        }
        return (bytes, text)
    }

}
