"""Reduced sampling-quality case study (Masood, Pan & Doshi-Velez 2016) for `make bench`.

Reduced sizes (stated in the output): 3 reps, 2000 Gibbs/HMC draws, 1000 One/All-Modes
samples, 300 restarts (small data) / 100 (large), coverage on the first 500 samples. The full
protocol is ``python -m benchmarks.sampling_quality.run`` (10 reps x 10,000).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sampling_quality.run import main  # noqa: E402

if __name__ == "__main__":
    main(["--datasets", "unique", "two", "infinite", "--reps", "3", "--draws", "2000",
          "--baseline", "1000", "--restarts", "300", "--cover", "500"] + sys.argv[1:])
    main(["--datasets", "unique_large", "two_large", "infinite_large", "--reps", "2",
          "--draws", "1000", "--baseline", "300", "--restarts", "100", "--cover", "300"]
         + sys.argv[1:])
