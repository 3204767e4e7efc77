import numpy as np
from bnmfzoo.diagnostics.mode_clustering import matched_angles, _unit_l2
f = np.load('/tmp/r2/diag2.npz')
refs = np.load('/tmp/r2/refs12.npy')
allA = f['allA0']; labs = f['labs0']; betas = f['betas0']; ll = f['ll0']
T, n = allA.shape[:2]
d, _ = matched_angles(_unit_l2(allA.reshape(T * n, *allA.shape[2:])), refs)
d = d.reshape(T, n, 2)
near = d.argmin(-1); dmin = d.min(-1)
tune = 100  # snapshots (every 10 steps) in tuning
print("rung beta  frac_mode1  med_dist_to_nearest  switches(snapshots)")
for i in list(range(0, n, 3)) + [n - 1]:
    lab = np.where(dmin[tune:, i] < 12, near[tune:, i], -1)
    sw = int((np.diff(lab[lab >= 0]) != 0).sum())
    print(f"{i:3d} {betas[i]:.3f} {np.mean(near[tune:, i] == 1):.2f} {np.median(dmin[tune:, i]):6.1f} "
          f"frac_far(>12) {np.mean(dmin[tune:, i] >= 12):.2f} switches {sw}")
# round trips: for each replica identity, count passages hot(n-1) -> cold(0)
pos = np.argsort(labs, axis=1)  # pos[t, label] = rung of that label
rt = 0; down_times = []
for L in range(n):
    p = pos[1000:, L]; state = None; t0 = None
    for t, x in enumerate(p):
        if x == n - 1: state = 'hot'; t0 = t
        elif x == 0 and state == 'hot': rt += 1; down_times.append(t - t0); state = 'cold'
print("hot->cold passages in draws:", rt, "median time", np.median(down_times) if down_times else None)
print("cold ll blocks", [round(x) for x in ll[:, 0].reshape(-1, 500).mean(1)])
