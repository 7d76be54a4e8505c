import CCurl
import CHeraldShims
import ChannelAPI

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Corked connection sockets (loop thread): what a round writes leaves in as few segments as it fills.
extension EventLoop {
    /// Corks the socket of the connection `handle`'s finished transfer used, if libcurl keeps that
    /// connection. Only such sockets are corked: libcurl closes them through the close callback, while
    /// a socket that never carried a transfer (a failed or losing connect attempt) may be closed
    /// without it, and its number must not stay in the set.
    func corkConnection(of handle: UnsafeMutableRawPointer) {
        var socket: curl_socket_t = -1
        guard herald_curl_easy_getinfo_socket(handle, CURLINFO_ACTIVESOCKET, &socket) == CURLE_OK, socket >= 0,
            !corked.contains(socket)
        else { return }
        if corked.cork(socket) { stats.socketsCorked.add(1, ordering: .relaxed) }
    }

    /// libcurl is closing a connection socket (loop thread).
    func socketClosing(_ fd: Int32) {
        if corked.remove(fd) { stats.socketsCorked.subtract(1, ordering: .relaxed) }
    }

    /// The close callback every transfer gets while this loop corks sockets: it uncorks the socket's
    /// number before closing it. The callback is kept by the connection, which lives in this loop's
    /// multi handle and dies with it; libcurl closes every connection socket through it.
    var closeHook: CurlOptions.SocketCloseHook? {
        guard corked.limit > 0 else { return nil }
        return CurlOptions.SocketCloseHook(
            function: { loop, fd in
                if let loop { Unmanaged<EventLoop>.fromOpaque(loop).takeUnretainedValue().socketClosing(fd) }
                return close(fd)
            },
            context: Unmanaged.passUnretained(self).toOpaque())
    }
}
