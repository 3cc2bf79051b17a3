"""Use cases: ingest, teams, read queries. Each takes the session explicitly."""
