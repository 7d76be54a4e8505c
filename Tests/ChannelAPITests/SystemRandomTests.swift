import ChannelAPI
import Testing

/// `SystemRandom`: the lengths asked for, and bytes that are not a constant or a repeat.
@Suite struct SystemRandomTests {
    /// Every length from 0 to 40 and two past `getrandom`'s 256-byte single-call guarantee.
    @Test func givesTheLengthAskedFor() {
        for count in Array(0...40) + [256, 257, 4096] {
            #expect(SystemRandom().bytes(count).count == count)
        }
        #expect(SystemRandom().bytes(-1).isEmpty)
    }

    /// Two 16-byte draws (a delivery id's) differ, and 4 KiB covers most of the 256 byte values:
    /// the chance of either failing for real randomness is below 10^-30.
    @Test func bytesAreFresh() {
        let random = SystemRandom()
        #expect(random.bytes(16) != random.bytes(16))
        let large = random.bytes(4096)
        #expect(Set(large).count > 200)
        // The tail past 256 bytes is filled too, not left as zeros.
        #expect(Set(large.suffix(1024)).count > 100)
    }
}
