"""Rendering of results for people: rich tables and terminal charts (CLI only)."""
