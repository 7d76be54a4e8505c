// Placeholder; replaced as WebPush lands.
