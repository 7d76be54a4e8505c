import ChannelAPI

/// Decides, per host, whether a request may be handed to libcurl now or must wait, and in which order
/// the waiting ones start. Pure bookkeeping: no libcurl, no threads, no clock; an ``EventLoop`` owns
/// one and calls it from its thread only.
///
/// - A host (``HostKey``) gets at most ``capacity(for:)`` transfers at once: every connection it may
///   open, full of streams. More would wait inside libcurl, which walks its whole pending list each
///   time a transfer ends; they wait here instead, in a FIFO that costs nothing per transfer.
/// - A host whose last answer came over HTTP/1.1 runs one transfer per connection, so it gets only as
///   many as it has connections; an HTTP/2 answer gives it its streams back.
/// - A request of a host that already has waiting requests waits behind them, even when a slot is
///   free, so a host's requests start in arrival order.
struct HostScheduler<Item> {
    /// Most connections libcurl opens to one host (at least 1).
    let connectionsPerHost: Int
    /// Most concurrent streams on one HTTP/2 connection (at least 1).
    let streamsPerConnection: Int
    /// Transfers handed to libcurl, per host.
    private var active: [String: Int] = [:]
    /// Requests waiting for a free slot of their host, in arrival order. A host has an entry only while
    /// something waits.
    private var queues: [String: FIFOQueue<Item>] = [:]
    /// Hosts whose last answer came over HTTP/1.1.
    private var http1Hosts: Set<String> = []
    /// Requests waiting, over every host.
    private(set) var waitingCount = 0

    init(connectionsPerHost: Int, streamsPerConnection: Int) {
        self.connectionsPerHost = max(1, connectionsPerHost)
        self.streamsPerConnection = max(1, streamsPerConnection)
    }

    /// Most transfers `host` may have in libcurl at once.
    func capacity(for host: String) -> Int {
        if !http1Hosts.isEmpty, http1Hosts.contains(host) { return connectionsPerHost }
        return connectionsPerHost * streamsPerConnection
    }

    /// Transfers of `host` handed to libcurl right now.
    func activeCount(for host: String) -> Int { active[host, default: 0] }

    /// Whether a new request of `host` must wait: others already wait, or every slot is busy.
    func mustWait(_ host: String) -> Bool {
        queues[host] != nil || active[host, default: 0] >= capacity(for: host)
    }

    /// Queues `item` behind the waiting requests of `host`.
    mutating func enqueue(_ item: Item, host: String) {
        queues[host, default: FIFOQueue()].append(item)
        waitingCount += 1
    }

    /// Records that a transfer of `host` was handed to libcurl.
    mutating func started(_ host: String) {
        active[host, default: 0] += 1
    }

    /// Records that a transfer of `host` left libcurl, and the HTTP version of its answer (nil when it
    /// failed without one), which tells whether the host multiplexes.
    mutating func finished(_ host: String, version: HTTPVersion?) {
        if version == .http1_1 {
            http1Hosts.insert(host)
        } else if version != nil, !http1Hosts.isEmpty {
            http1Hosts.remove(host)
        }
        active[host, default: 1] -= 1  // a host keeps its entry (at 0): one hash per finished transfer
    }

    /// Takes the oldest waiting request of `host` when the host has a free slot; the caller then
    /// starts it (and calls ``started(_:)``) or fails it.
    mutating func nextReady(_ host: String) -> Item? {
        // Nothing waits (the common case): one lookup.
        guard queues[host] != nil, active[host, default: 0] < capacity(for: host),
            let item = queues[host]?.popFirst()
        else { return nil }
        if queues[host]?.isEmpty == true { queues[host] = nil }
        waitingCount -= 1
        return item
    }

    /// Removes and returns the first waiting request (of any host) that matches.
    mutating func removeFirst(where match: (Item) -> Bool) -> Item? {
        for host in Array(queues.keys) {
            guard let item = queues[host]?.remove(where: match) else { continue }
            if queues[host]?.isEmpty == true { queues[host] = nil }
            waitingCount -= 1
            return item
        }
        return nil
    }

    /// Removes and returns every waiting request (of any host) that matches, each host's in order.
    mutating func removeAll(where match: (Item) -> Bool) -> [Item] {
        var removed: [Item] = []
        for host in Array(queues.keys) {
            guard let taken = queues[host]?.removeAll(where: match), !taken.isEmpty else { continue }
            if queues[host]?.isEmpty == true { queues[host] = nil }
            waitingCount -= taken.count
            removed += taken
        }
        return removed
    }

    /// Removes and returns every waiting request (used when the loop stops).
    mutating func removeAllWaiting() -> [Item] {
        let all = queues.values.flatMap(\.elements)
        queues.removeAll()
        waitingCount = 0
        return all
    }
}
