import Foundation
import HeraldSync
import Testing

@testable import Router

/// The one timer behind every `deliver` call's outer bound: deadlines fire once, in time, removed
/// ones never, and an earlier deadline added after later ones does not wait for them.
@Suite struct DeadlineWatchTests {
    /// Records which ids fired, and when.
    final class Fired: Sendable {
        let log = Locked<[(Int, ContinuousClock.Instant)]>([])
        func note(_ id: Int) { log.withLock { $0.append((id, ContinuousClock.now)) } }
        var ids: [Int] { log.withLock { $0.map(\.0) } }

        /// Waits until `count` have fired, at most `limit`. The limits below are generous: this is a
        /// wait for an event, not a timing check, and when the whole suite starts together its
        /// blocking set-ups (a PostgreSQL server starting, subprocesses) have held both threads of
        /// a 2-core machine's cooperative pool for over 20 s, so a 10 s limit ran out before the
        /// watch's task (or this loop) could run at all (clean-clone CI, session 9).
        func wait(for count: Int, limit: Duration) async {
            let end = ContinuousClock.now.advanced(by: limit)
            while log.withLock({ $0.count }) < count, ContinuousClock.now < end {
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    @Test func aDeadlineFiresOnceAfterItsDurationAndIsThenForgotten() async throws {
        let watch = DeadlineWatch()
        let fired = Fired()
        let start = ContinuousClock.now
        _ = watch.add(after: .milliseconds(50)) { fired.note(1) }
        await fired.wait(for: 1, limit: TestTiming.bound(.seconds(90)))
        let log = fired.log.withLock { $0 }
        #expect(log.map(\.0) == [1])
        #expect(try #require(log.first).1 - start >= .milliseconds(50))
        #expect(watch.count == 0)
        try? await Task.sleep(for: .milliseconds(100))
        #expect(fired.ids == [1])
    }

    @Test func aRemovedDeadlineNeverFires() async {
        let watch = DeadlineWatch()
        let fired = Fired()
        let removed = watch.add(after: .milliseconds(30)) { fired.note(1) }
        _ = watch.add(after: .milliseconds(60)) { fired.note(2) }
        watch.remove(removed)
        await fired.wait(for: 1, limit: TestTiming.bound(.seconds(90)))
        try? await Task.sleep(for: .milliseconds(100))
        #expect(fired.ids == [2])
        #expect(watch.count == 0)
    }

    /// A watch sleeping until a distant deadline still fires a near one added later on time.
    @Test func anEarlierDeadlineAddedLaterDoesNotWaitForTheLaterOne() async {
        let watch = DeadlineWatch()
        let fired = Fired()
        let far = watch.add(after: .seconds(3600)) { fired.note(1) }
        _ = watch.add(after: .milliseconds(20)) { fired.note(2) }
        await fired.wait(for: 1, limit: TestTiming.bound(.seconds(90)))
        #expect(fired.ids == [2])
        #expect(watch.count == 1)
        watch.remove(far)
        #expect(watch.count == 0)
    }

    /// Many deadlines, added from many tasks at once, each fire exactly once.
    @Test func manyDeadlinesFromManyTasksFireOnceEach() async {
        let watch = DeadlineWatch()
        let fired = Fired()
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<200 {
                group.addTask { _ = watch.add(after: .milliseconds(10 + (i % 10) * 15)) { fired.note(i) } }
            }
        }
        await fired.wait(for: 200, limit: TestTiming.bound(.seconds(90)))
        let ids = fired.ids
        #expect(ids.count == 200)
        #expect(Set(ids) == Set(0..<200))
        #expect(watch.count == 0)
    }

    /// Deadlines fire in their order, also those that fall due in the same wake-up.
    @Test func deadlinesFireInTheirOrder() async {
        let watch = DeadlineWatch()
        let fired = Fired()
        // Added in order with growing durations, so the deadlines grow too; 1 µs apart, so most
        // fall due together.
        for i in 0..<50 { _ = watch.add(after: .milliseconds(20) + .microseconds(i)) { fired.note(i) } }
        await fired.wait(for: 50, limit: TestTiming.bound(.seconds(90)))
        #expect(fired.ids == Array(0..<50))
    }
}
