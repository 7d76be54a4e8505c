// Placeholder; replaced as Router lands.
