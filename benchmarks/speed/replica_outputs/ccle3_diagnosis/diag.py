"""Diagnose replica exchange on CCLE rank 3 (numeric core, no PyMC): per chain, track the cold
and the hottest replica, swap rates, round trips."""
import sys, time, numpy as np
sys.argv += [] 
from benchmarks._common import Clock  # noqa
from bnmfzoo import datasets
from bnmfzoo.models import exponential_gaussian
from bnmfzoo.models._spec import get_spec
from bnmfzoo.inference.gaussian._core import nmf_state, observed_entries
from bnmfzoo.inference.gaussian._tempering import (LadderTuner, geometric_ladder, log_likelihood,
                                                   swap_pass, tempered_sweep)
import argparse
p = argparse.ArgumentParser()
p.add_argument("--seed", type=int, default=12)
p.add_argument("--n", type=int, default=48)
p.add_argument("--bmin", type=float, default=0.15)
p.add_argument("--tune", type=int, default=1000)
p.add_argument("--draws", type=int, default=2000)
p.add_argument("--out", default="/tmp/r2/diag.npz")
a = p.parse_args()
X = datasets.load_ccle("ic50")
R = 3
model = exponential_gaussian(X, R)
spec = get_spec(model, families="exponential_gaussian", method="x")
hyper = spec.hyper; obs = observed_entries(spec.X, spec.mask)
rng0 = np.random.default_rng(a.seed)
D, N = X.shape
scale = np.sqrt(np.nanmean(np.asarray(X)) / R)
starts = [(rng0.exponential(scale, (D, R)), rng0.exponential(scale, (R, N))) for _ in range(4)]
out = {}
c0 = time.process_time()
for c in range(4):
    rng = np.random.default_rng([a.seed, c])
    betas = geometric_ladder(a.n, a.bmin)
    reps = [nmf_state(starts[c][0].copy(), starts[c][1].copy(), 1.0, None, obs) for _ in range(a.n)]
    labels = list(range(a.n)); tuner = LadderTuner(); parity = 0
    T = a.tune + a.draws
    coldA = np.empty((a.draws, D, R)); coldW = np.empty((a.draws, R, N)); hotA = np.empty((T, D, R)); tau = np.empty(a.draws)
    lab = np.empty(T, int); probs = np.full((T, a.n - 1), np.nan); ll_all = np.empty((T, a.n))
    for t in range(T):
        for i, st in enumerate(reps):
            tempered_sweep(st, obs, hyper, rng, betas[i])
        ll = [log_likelihood(st, obs, hyper) for st in reps]
        ll_all[t] = ll
        prob, acc = swap_pass(reps, betas, ll, rng, parity)
        for i in np.flatnonzero(acc):
            labels[i], labels[i + 1] = labels[i + 1], labels[i]
        parity ^= 1
        if t < a.tune and a.n > 2:
            tuner.record(prob); betas = tuner.maybe_retune(betas)
        probs[t] = prob; lab[t] = labels[0]; hotA[t] = reps[-1].A
        if t >= a.tune:
            coldA[t - a.tune] = reps[0].A; coldW[t - a.tune] = reps[0].W; tau[t - a.tune] = reps[0].tau
    out[f"coldA{c}"] = coldA; out[f"coldW{c}"] = coldW; out[f"hotA{c}"] = hotA; out[f"tau{c}"] = tau
    out[f"lab{c}"] = lab; out[f"probs{c}"] = probs; out[f"betas{c}"] = betas; out[f"ll{c}"] = ll_all
    print(f"chain {c}: cpu so far {time.process_time()-c0:.1f}s, final betas[-5:] {betas[-5:].round(4)}", flush=True)
np.savez_compressed(a.out, **out)
print("cpu", time.process_time() - c0)
