"""Foundation floor: what every other floor may import.

Seeds, progress bars, lazy namespaces, sparse / long-format entries, input validation, the
DataTree builder, timers and the plain NMF solvers.
"""
