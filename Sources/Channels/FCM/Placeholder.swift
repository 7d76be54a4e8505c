// Placeholder; replaced as FCM lands.
