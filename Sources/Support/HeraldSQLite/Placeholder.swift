// Placeholder; replaced as HeraldSQLite lands.
