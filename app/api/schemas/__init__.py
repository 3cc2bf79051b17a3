"""Request and response bodies of the HTTP API (pydantic v2), one module per capability,
separate from the ORM models."""
