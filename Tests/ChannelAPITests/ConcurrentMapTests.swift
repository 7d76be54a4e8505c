import ChannelAPI
import HeraldSync
import Testing

@Suite struct ConcurrentMapTests {
    final class Gauge: Sendable {
        let state = Locked<(now: Int, peak: Int)>((0, 0))
        func enter() {
            state.withLock {
                $0.now += 1
                $0.peak = max($0.peak, $0.now)
            }
        }
        func leave() { state.withLock { $0.now -= 1 } }
        var peak: Int { state.withLock { $0.peak } }
    }

    @Test func keepsOrderAndBoundsConcurrency() async {
        let gauge = Gauge()
        let out = await ConcurrentMap.map(Array(0..<200), limit: 7) { i in
            gauge.enter()
            try? await Task.sleep(for: .microseconds(200 * (i % 5)))
            gauge.leave()
            return i * 2
        }
        #expect(out == (0..<200).map { $0 * 2 })
        #expect(gauge.peak <= 7)
        #expect(gauge.peak > 1)
        #expect(await ConcurrentMap.map([Int](), limit: 3) { $0 }.isEmpty)
    }
}
