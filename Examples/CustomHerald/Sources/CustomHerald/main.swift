import HeraldChannels
import HeraldCommand
import NtfyChannel

// Every command of the shipped `herald` (validate, explain, send, serve with its reload, channels
// check, …), and one more channel type: `type: ntfy`, with its platform `ntfy`.
var registry = HeraldChannels.registry
registry.register(NtfyChannel.factory)
await HeraldCommand.main(registry: registry)
