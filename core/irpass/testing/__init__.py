"""Helpers for tests, examples and benchmarks."""
