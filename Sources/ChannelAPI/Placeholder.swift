// Placeholder; replaced as ChannelAPI lands.
