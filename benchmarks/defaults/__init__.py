"""Checks of the library's default settings on data in any units (issue #34)."""
