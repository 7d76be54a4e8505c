// Placeholder; replaced as HeraldHTTP lands.
