import CCurl

/// The per-host unit of an event loop's scheduling (``HostScheduler``): `scheme://host:port`, lower-cased,
/// as libcurl's own URL parser (`curl_url`) reads the URL. That is the unit libcurl's connection limit
/// and connection reuse apply to, so:
/// - the port is always present, the scheme's default port filled in (`https://a/` and `https://a:443/`
///   are one host);
/// - user info is left out (`https://user@a/` is host `a`);
/// - an IPv6 literal keeps its brackets (`https://[::1]:8443`), with its zone id if it has one.
///
/// Computed by ``HTTPClient`` when a request is submitted, so the loop thread does not pay for it.
package enum HostKey {
    /// The host key of `url`. A URL libcurl cannot parse gets the whole URL, lower-cased, as its key: its
    /// transfer then fails in libcurl with `.invalidRequest`, alone in its queue.
    package static func of(_ url: String) -> String {
        guard let handle = curl_url() else { return url.lowercased() }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, url, 0) == CURLUE_OK,
            let scheme = part(handle, CURLUPART_SCHEME, 0),
            let host = part(handle, CURLUPART_HOST, 0),
            let port = part(handle, CURLUPART_PORT, UInt32(CURLU_DEFAULT_PORT))
        else { return url.lowercased() }
        var key = scheme + "://" + host
        if let zone = part(handle, CURLUPART_ZONEID, 0), key.last == "]" {
            key.removeLast()
            key += "%25" + zone + "]"
        }
        key += ":" + port
        return key.lowercased()
    }

    /// One part of a parsed URL, or nil when the URL has none.
    private static func part(_ handle: OpaquePointer, _ which: CURLUPart, _ flags: UInt32) -> String? {
        var text: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, which, &text, flags) == CURLUE_OK, let text else { return nil }
        defer { curl_free(text) }
        return String(cString: text)
    }
}
