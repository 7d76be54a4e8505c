import BrokenChannels
import Foundation
import HeraldChannels
import HeraldCommand

// `herald` with one more channel type, `broken` (Tests/BrokenChannels): the tests run
// `channels check` against each of its breaks, as a plugin author runs it against a channel.
var registry = HeraldChannels.registry
do {
    try registry.register(BrokenChannel.factory())
} catch {
    FileHandle.standardError.write(Data("herald: \(error)\n".utf8))
    exit(70)
}
await HeraldCommand.main(registry: registry)
