// Placeholder; replaced as HeraldCrypto lands.
