import CCurl
import HeraldSync

/// The per-host unit of an event loop's scheduling (``HostScheduler``): `scheme://host:port`, lower-cased,
/// as libcurl's own URL parser (`curl_url`) reads the URL. That is the unit libcurl's connection limit
/// and connection reuse apply to, so:
/// - the port is always present, the scheme's default port filled in (`https://a/` and `https://a:443/`
///   are one host);
/// - user info is left out (`https://user@a/` is host `a`);
/// - an IPv6 literal keeps its brackets (`https://[::1]:8443`), with its zone id if it has one.
///
/// Computed by ``HTTPClient`` when a request is submitted, so the loop thread does not pay for it.
/// The key depends only on the URL's text before its path, query or fragment (its origin), so the
/// keys libcurl gave are remembered by that text (up to ``cacheLimit`` of them): a relay that sends
/// every push to one APNs host parses its origin once, not once a push (`curl_url` was 1.5% of a
/// Pulse relay's CPU).
package enum HostKey {
    /// The most origins remembered; past it the memory starts over.
    static let cacheLimit = 256
    private static let cache = Locked<[Substring: String]>([:])

    /// The host key of `url`. A URL libcurl cannot parse gets the whole URL, lower-cased, as its key: its
    /// transfer then fails in libcurl with `.invalidRequest`, alone in its queue. Such a URL is not
    /// remembered.
    package static func of(_ url: String) -> String {
        guard let origin = origin(of: url) else { return parse(url).key }
        if let key = cache.withLock({ $0[origin] }) { return key }
        let (key, parsed) = parse(url)
        if parsed {
            cache.withLock { cache in
                if cache.count >= cacheLimit { cache.removeAll(keepingCapacity: true) }
                // A copy of the origin alone: the slice would keep the whole URL (a device token in
                // its path, say) alive in the memory.
                cache[Substring(String(origin))] = key
            }
        }
        return key
    }

    /// The text of `url` before the first `/`, `?` or `#` after its `://`: the scheme and the
    /// authority, everything the key is made of. Nil without a `://`.
    static func origin(of url: String) -> Substring? {
        let bytes = url.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let slashes = bytes[colon...].dropFirst()
        guard slashes.starts(with: "//".utf8) else { return nil }
        let authority = slashes.dropFirst(2)
        let end =
            authority.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? bytes.endIndex
        return url[url.startIndex..<end]
    }

    /// libcurl's reading of `url`, and whether it could read it.
    private static func parse(_ url: String) -> (key: String, parsed: Bool) {
        guard let handle = curl_url() else { return (url.lowercased(), false) }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, url, 0) == CURLUE_OK,
            let scheme = part(handle, CURLUPART_SCHEME, 0),
            let host = part(handle, CURLUPART_HOST, 0),
            let port = part(handle, CURLUPART_PORT, UInt32(CURLU_DEFAULT_PORT))
        else { return (url.lowercased(), false) }
        var key = scheme + "://" + host
        if let zone = part(handle, CURLUPART_ZONEID, 0), key.last == "]" {
            key.removeLast()
            key += "%25" + zone + "]"
        }
        key += ":" + port
        return (key.lowercased(), true)
    }

    /// One part of a parsed URL, or nil when the URL has none.
    private static func part(_ handle: OpaquePointer, _ which: CURLUPart, _ flags: UInt32) -> String? {
        var text: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, which, &text, flags) == CURLUE_OK, let text else { return nil }
        defer { curl_free(text) }
        return String(cString: text)
    }
}
