"""Speed benchmarks: each times ours against a baseline in the same run (``make bench``)."""
