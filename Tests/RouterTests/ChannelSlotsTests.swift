import HeraldSync
import Testing

@testable import Router

/// ``ChannelSlots``: at most `limit` holders per channel, waiters served in arrival order, channels
/// independent of each other.
@Suite struct ChannelSlotsTests {
    /// Order, not time: each waiter is seen queued (``ChannelSlots/waiting(_:)``) before the next one
    /// starts, so a busy machine (ThreadSanitizer on two cores) only makes it slower.
    @Test(.timeLimit(.minutes(10))) func holdersStayWithinTheLimitAndWaitersGoInOrder() async throws {
        let slots = ChannelSlots(limit: 2)
        await slots.acquire("a")
        await slots.acquire("a")
        // A third holder of "a" waits; another channel does not.
        await slots.acquire("b")
        let order = Locked<[Int]>([])
        var waiters: [Task<Void, Never>] = []
        for i in 0..<5 {
            waiters.append(
                Task {
                    await slots.acquire("a")
                    order.withLock { $0.append(i) }
                })
            // Each waiter queues before the next one starts.
            while slots.waiting("a") < i + 1 { try await Task.sleep(for: .milliseconds(2)) }
        }
        #expect(order.withLock { $0 }.isEmpty)
        for expected in 1...5 {
            slots.release("a")
            await waiters[expected - 1].value
            #expect(order.withLock { $0 } == Array(0..<expected))
        }
        slots.release("b")
        for _ in 0..<6 { slots.release("a") }
        // Everything given back (and more releases than holders): both slots are free again.
        await slots.acquire("a")
        await slots.acquire("a")
        slots.release("a")
        slots.release("a")
    }
}
