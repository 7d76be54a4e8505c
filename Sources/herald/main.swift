import HeraldChannels
import HeraldCommand

// The shipped `herald`: the command-line program (HeraldCommand) over the built-in channel types.
await HeraldCommand.main(registry: HeraldChannels.registry)
