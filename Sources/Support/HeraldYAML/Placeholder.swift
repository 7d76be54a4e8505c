// Placeholder; replaced as HeraldYAML lands.
