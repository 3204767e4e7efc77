"""Self-test of the benchmark's per-method cache (no method is run)."""

import numpy as np

from benchmarks.signatures.versus_sigprofiler import _cache_key, _cache_load, _cache_store


def test_cache_round_trip_and_refuses_another_catalogue(tmp_path, capsys):
    X = np.arange(12).reshape(3, 4)
    settings = dict(replicates=10, min_iter=2000, max_iter=10000, test_conv=1000)
    key = _cache_key("correlated", 0, "sigprofiler", 500, [6, 7, 8], settings)
    assert key == "correlated_n500_seed0_r6-8_sigprofiler_rep10_it2000-10000_conv1000"
    assert _cache_key("correlated", 0, "ours", 500, [6, 7, 8], None) == (
        "correlated_n500_seed0_r6-8_ours")
    assert _cache_load(tmp_path, key, X) is None  # nothing stored yet
    row = {"K": 8, "cpu": 583.1, "scores": {"0.9": {"f1": 0.941}}}
    _cache_store(tmp_path, key, X, row, np.eye(2))
    got = _cache_load(tmp_path, key, X)
    assert got["row"] == row and np.array_equal(got["W"], np.eye(2))
    other = X.copy()
    other[0, 0] += 1
    assert _cache_load(tmp_path, key, other) is None
    assert "another catalogue" in capsys.readouterr().out
