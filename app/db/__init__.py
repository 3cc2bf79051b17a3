"""Persistence: engine and sessions, ORM models, migrations."""
