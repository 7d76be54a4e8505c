// Placeholder; replaced as Relay lands.
