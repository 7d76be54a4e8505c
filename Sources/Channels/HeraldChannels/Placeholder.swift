// Placeholder; replaced as HeraldChannels lands.
