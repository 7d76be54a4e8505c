import Foundation
import HeraldChannels
import HeraldCommand
import NtfyChannel

// Every command of the shipped `herald` (validate, explain, send, serve with its reload, channels
// check, …), and one more channel type: `type: ntfy`, with its platform `ntfy`.
var registry = HeraldChannels.registry
do {
    try registry.register(NtfyChannel.factory)
} catch {
    FileHandle.standardError.write(Data("herald: \(error)\n".utf8))  // a type or platform taken by another module
    exit(70)
}
await HeraldCommand.main(registry: registry)
