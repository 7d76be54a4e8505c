import Testing

@testable import HeraldServer

/// The bound on relay pushes in flight: a request takes as many as it sends to (at most the whole
/// bound), later requests wait in arrival order, and a release starts the waiters that now fit.
@Suite struct RelayPushGateTests {
    @Test func requestsWaitForRoomInArrivalOrder() async throws {
        let gate = RelayPushGate(capacity: 100)
        await gate.acquire(60)
        await gate.acquire(40)
        #expect(gate.inFlight == 100)
        let order = Order()
        let big = Task {
            await gate.acquire(500)  // more than the bound: waits for all of it
            await order.note("big")
            gate.release(500)
        }
        while gate.waiting < 1 { await Task.yield() }
        let small = Task {
            await gate.acquire(1)
            await order.note("small")
            gate.release(1)
        }
        while gate.waiting < 2 { await Task.yield() }
        gate.release(60)
        #expect(gate.waiting == 2, "the first waiter needs the whole bound; the second waits behind it")
        gate.release(40)
        await big.value
        await small.value
        #expect(await order.names == ["big", "small"])
        #expect(gate.inFlight == 0)
    }

    actor Order {
        var names: [String] = []
        func note(_ name: String) { names.append(name) }
    }
}
