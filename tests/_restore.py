"""Shared check of step methods' ``sampling_state``: a restored snapshot continues exactly."""

import numpy as np


def assert_restore_continues(step, point, stat_names, n_steps=20):
    """Take ``step.sampling_state``, run ``n_steps`` from ``point``, restore, run again: the
    points and the stats ``stat_names`` must be identical."""
    snap = step.sampling_state

    def run(p):
        out = []
        for _ in range(n_steps):
            p, stats = step.step(p)
            out.append((p, stats[0]))
        return out

    first = run(point)
    step.sampling_state = snap
    again = run(point)
    for (p1, s1), (p2, s2) in zip(first, again, strict=True):
        for name in p1:
            assert np.array_equal(p1[name], p2[name]), name
        for name in stat_names:
            assert s1[name] == s2[name], name
