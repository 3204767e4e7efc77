"""Population annealing with exact tempered Gibbs on CCLE rank 3: mode fractions along beta."""
import numpy as np, itertools, time, sys, math
from bnmfzoo import datasets
from bnmfzoo.models import exponential_gaussian
from bnmfzoo.models._spec import get_spec
from bnmfzoo.inference.gaussian._core import nmf_state, observed_entries
from bnmfzoo.inference.gaussian._tempering import log_likelihood, tempered_sweep
X = datasets.load_ccle("ic50"); R = 3
spec = get_spec(exponential_gaussian(X, R), families="exponential_gaussian", method="x")
hyper = spec.hyper; obs = observed_entries(spec.X, spec.mask)
D, N = X.shape
scale = np.sqrt(np.nanmean(np.asarray(X)) / R)
Wm = np.load("./e1_W.npy"); reps_H, reps_L = Wm[23], Wm[7]
def wdir(W): return W / np.linalg.norm(W, axis=1, keepdims=True)
def dist(W1, W2):
    a, b = wdir(W1), wdir(W2)
    return min(np.degrees(np.mean([np.arccos(np.clip(a[i] @ b[p[i]], -1, 1)) for i in range(R)])) for p in itertools.permutations(range(R)))
P, bmin, cess, nsw, seed = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rng = np.random.default_rng(seed)
parts = [nmf_state(rng.exponential(scale, (D, R)), rng.exponential(scale, (R, N)), 1.0, None, obs) for _ in range(P)]
beta = bmin
t0 = time.process_time()
for s in parts:
    for _ in range(100): tempered_sweep(s, obs, hyper, rng, beta)
logZ = 0.0; step = 0
while True:
    ll = np.array([log_likelihood(s, obs, hyper) for s in parts])
    # next beta: conditional ESS (equal weights after resampling) = cess * P
    def cess_of(db):
        w = np.exp(db * (ll - ll.max())); return (w.sum() ** 2) / (w @ w) / P
    if cess_of(1.0 - beta) >= cess: nb = 1.0
    else:
        lo, hi = 0.0, 1.0 - beta
        for _ in range(50):
            mid = (lo + hi) / 2
            if cess_of(mid) >= cess: lo = mid
            else: hi = mid
        nb = beta + lo
    lw = (nb - beta) * ll; m = lw.max(); w = np.exp(lw - m); logZ += m + math.log(w.mean()); w /= w.sum()
    # systematic resampling
    u = (rng.random() + np.arange(P)) / P; idx = np.searchsorted(np.cumsum(w), u); idx = np.minimum(idx, P - 1)
    parts = [nmf_state(parts[i].A.copy(), parts[i].W.copy(), parts[i].tau, None, obs) for i in idx]
    beta = nb; step += 1
    for s in parts:
        for _ in range(nsw): tempered_sweep(s, obs, hyper, rng, beta)
    if step % 10 == 0 or beta == 1.0:
        lab = ['H' if dist(s.W, reps_H) < dist(s.W, reps_L) else 'L' for s in parts]
        near = np.mean([min(dist(s.W, reps_H), dist(s.W, reps_L)) for s in parts])
        print(f"step {step} beta {beta:.3f} fracH {lab.count('H')/P:.2f} unique {len(set(idx))} mean-dist {near:.1f} cpu {time.process_time()-t0:.0f}", flush=True)
    if beta >= 1.0: break
ll = np.array([log_likelihood(s, obs, hyper) for s in parts])
print("final ll H", np.mean([l for l, s in zip(ll, parts) if dist(s.W, reps_H) < dist(s.W, reps_L)] or [np.nan]), "L", np.mean([l for l, s in zip(ll, parts) if dist(s.W, reps_H) >= dist(s.W, reps_L)] or [np.nan]), "logZ", logZ)
