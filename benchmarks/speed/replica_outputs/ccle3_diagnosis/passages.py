"""Hot -> cold passages of replica identities in a diag2/diag3 output (one chain)."""
import sys
import numpy as np
f = np.load(sys.argv[1]); S = int(sys.argv[2])
labs = f['labs0']; ll = f['ll0']; n = labs.shape[1]; T = labs.shape[0]
pos = np.argsort(labs, axis=1); rt = 0; times = []
for L in range(n):
    p = pos[T - S:, L]; state = None
    for t, x in enumerate(p):
        if x == n - 1: state = 'hot'; t0 = t
        elif x == 0 and state == 'hot': rt += 1; times.append(t - t0); state = None
print(f'hot->cold passages in the last {S} steps: {rt}, median time {np.median(times) if times else None}; '
      f'mean swap rate {np.nanmean(f["probs0"][T - S:]):.2f}')
print('cold loglik by blocks', [round(x) for x in ll[T - S:, 0].reshape(10, -1).mean(1)])
