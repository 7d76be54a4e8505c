import Testing

@testable import HeraldHTTP

/// The event loop's per-host scheduling, without libcurl: capacity, FIFO order, HTTP/1.1 learning.
@Suite struct HostSchedulerTests {
    private let a = "https://a.example:443"
    private let b = "https://b.example:443"

    /// Starts what the scheduler lets start, queues the rest, as the loop does; returns what started.
    private func submit(_ items: [Int], host: String, to scheduler: inout HostScheduler<Int>) -> [Int] {
        var started: [Int] = []
        for item in items {
            if scheduler.mustWait(host) {
                scheduler.enqueue(item, host: host)
            } else {
                scheduler.started(host)
                started.append(item)
            }
        }
        return started
    }

    @Test func capacityIsConnectionsTimesStreams() {
        let scheduler = HostScheduler<Int>(connectionsPerHost: 2, streamsPerConnection: 3)
        #expect(scheduler.capacity(for: a) == 6)
        // Nonsense settings still leave one slot.
        let floor = HostScheduler<Int>(connectionsPerHost: 0, streamsPerConnection: -1)
        #expect(floor.capacity(for: a) == 1)
    }

    @Test func beyondCapacityRequestsWaitAndStartInArrivalOrder() {
        var scheduler = HostScheduler<Int>(connectionsPerHost: 1, streamsPerConnection: 2)
        let started = submit(Array(1...5), host: a, to: &scheduler)
        #expect(started == [1, 2])
        #expect(scheduler.waitingCount == 3)
        #expect(scheduler.activeCount(for: a) == 2)
        // Nothing starts while both slots are busy.
        #expect(scheduler.nextReady(a) == nil)
        scheduler.finished(a, version: .http2)
        #expect(scheduler.nextReady(a) == 3)
        scheduler.started(a)
        #expect(scheduler.nextReady(a) == nil)  // 2 and 3 hold both slots
        scheduler.finished(a, version: .http2)
        scheduler.finished(a, version: nil)
        #expect(scheduler.nextReady(a) == 4)
        scheduler.started(a)
        #expect(scheduler.nextReady(a) == 5)
        scheduler.started(a)
        #expect(scheduler.waitingCount == 0)
        #expect(!scheduler.mustWait(b))
    }

    @Test func aNewRequestWaitsBehindWaitingOnesEvenWithAFreeSlot() {
        var scheduler = HostScheduler<Int>(connectionsPerHost: 1, streamsPerConnection: 1)
        #expect(submit([1, 2], host: a, to: &scheduler) == [1])
        scheduler.finished(a, version: .http2)
        // A slot is free, but 2 waits: 3 must go behind it.
        #expect(scheduler.mustWait(a))
        #expect(submit([3], host: a, to: &scheduler) == [])
        #expect(scheduler.nextReady(a) == 2)
        scheduler.started(a)
        scheduler.finished(a, version: .http2)
        #expect(scheduler.nextReady(a) == 3)
        // Once nothing waits, a free slot is taken at once.
        #expect(!scheduler.mustWait(a))
    }

    @Test func hostsAreIndependent() {
        var scheduler = HostScheduler<Int>(connectionsPerHost: 1, streamsPerConnection: 1)
        #expect(submit([1, 2], host: a, to: &scheduler) == [1])
        #expect(submit([10], host: b, to: &scheduler) == [10])
        #expect(scheduler.nextReady(b) == nil)
        scheduler.finished(b, version: .http2)
        #expect(scheduler.nextReady(b) == nil)  // nothing of b waits; a's request is not b's
        #expect(scheduler.waitingCount == 1)
    }

    @Test func anHTTP1HostGetsOneTransferPerConnectionUntilItAnswersOverHTTP2() {
        var scheduler = HostScheduler<Int>(connectionsPerHost: 2, streamsPerConnection: 100)
        #expect(scheduler.capacity(for: a) == 200)
        scheduler.started(a)
        scheduler.finished(a, version: .http1_1)
        #expect(scheduler.capacity(for: a) == 2)
        #expect(scheduler.capacity(for: b) == 200)
        #expect(submit([1, 2, 3], host: a, to: &scheduler) == [1, 2])
        // A failure without an answer teaches nothing.
        scheduler.finished(a, version: nil)
        #expect(scheduler.capacity(for: a) == 2)
        #expect(scheduler.nextReady(a) == 3)
        scheduler.started(a)
        scheduler.finished(a, version: .http2)
        #expect(scheduler.capacity(for: a) == 200)
    }

    @Test func waitingRequestsCanBeRemovedOneOrManyOrAll() {
        var scheduler = HostScheduler<Int>(connectionsPerHost: 1, streamsPerConnection: 1)
        _ = submit(Array(1...6), host: a, to: &scheduler)
        _ = submit(Array(11...13), host: b, to: &scheduler)
        #expect(scheduler.waitingCount == 7)
        #expect(scheduler.removeFirst(where: { $0 == 4 }) == 4)
        #expect(scheduler.removeFirst(where: { $0 == 4 }) == nil)
        #expect(scheduler.removeFirst(where: { $0 == 1 }) == nil)  // 1 runs, it does not wait
        #expect(scheduler.removeAll(where: { $0 % 2 == 0 }).sorted() == [2, 6, 12])
        #expect(scheduler.waitingCount == 3)
        scheduler.finished(a, version: .http2)
        #expect(scheduler.nextReady(a) == 3)
        scheduler.started(a)
        #expect(scheduler.removeAllWaiting().sorted() == [5, 13])
        #expect(scheduler.waitingCount == 0)
        #expect(scheduler.mustWait(b))  // nothing of b waits, but 11 still holds b's one slot
        scheduler.finished(b, version: .http2)
        #expect(!scheduler.mustWait(b))
    }

    @Test func theQueueKeepsItsOrderOverManyItems() {
        var queue = FIFOQueue<Int>()
        var expected = 0
        for i in 0..<1000 {
            queue.append(i)
            if i % 3 == 0, let first = queue.popFirst() {
                #expect(first == expected)
                expected += 1
            }
        }
        #expect(queue.count == 1000 - expected)
        while let first = queue.popFirst() {
            #expect(first == expected)
            expected += 1
        }
        #expect(expected == 1000)
        #expect(queue.isEmpty)
    }
}
