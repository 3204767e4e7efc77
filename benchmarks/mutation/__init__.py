"""Mutation check of the fast test suite (issue #36): ``python -m benchmarks.mutation.run``."""
