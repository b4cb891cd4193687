"""Shared fixtures. Test helpers live in tests/helpers.py."""
