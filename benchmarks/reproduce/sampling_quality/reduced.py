"""Reduced sampling-quality case study (Masood, Pan & Doshi-Velez 2016).

Reduced sizes (stated in the output): 3 reps, 2000 Gibbs/HMC draws, 1000 One/All-Modes
samples, 300 restarts (small data) / 100 (large), coverage on the first 500 samples. The full
protocol is ``python -m benchmarks.reproduce.sampling_quality.run`` (10 reps x 10,000).
Run: ``python -m benchmarks.reproduce.sampling_quality.reduced [extra run.py options]``.
"""

import sys

from benchmarks.reproduce.sampling_quality.run import main

if __name__ == "__main__":
    main(["--datasets", "unique", "two", "infinite", "--reps", "3", "--draws", "2000",
          "--baseline", "1000", "--restarts", "300", "--cover", "500"] + sys.argv[1:])
    main(["--datasets", "unique_large", "two_large", "infinite_large", "--reps", "2",
          "--draws", "1000", "--baseline", "300", "--restarts", "100", "--cover", "300"]
         + sys.argv[1:])
