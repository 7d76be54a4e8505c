// Placeholder; replaced as Telegram lands.
