"""Placeholder: op builders (being written)."""
