// Placeholder; replaced as RouterTesting lands.
