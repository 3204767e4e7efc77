"""Helpers of the command line: result sizing, safe file writing, size checks before allocation."""
