"""Football-specific logic that knows nothing about HTTP or the database."""
