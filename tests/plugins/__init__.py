"""Fixture modules shared by several test modules, registered in tests/conftest.py with
``pytest_plugins``."""
