"""Mutational-signature benchmarks: ours against SigProfilerExtractor and scikit-learn."""
