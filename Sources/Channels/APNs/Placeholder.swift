// Placeholder; replaced as APNs lands.
