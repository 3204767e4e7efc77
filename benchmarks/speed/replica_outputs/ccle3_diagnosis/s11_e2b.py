import numpy as np, itertools, time, sys, math
from bnmfzoo import datasets
from bnmfzoo.models import exponential_gaussian
from bnmfzoo.models._spec import get_spec
from bnmfzoo.inference.gaussian._core import nmf_state, observed_entries, nmf_sweep
from bnmfzoo.inference.gaussian._tempering import log_likelihood, tempered_sweep, swap_pass, LadderTuner, geometric_ladder
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
start, nrep, bmin, tune, draws, seed = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
rng = np.random.default_rng([99, start])
st = nmf_state(rng.exponential(scale, (D, R)), rng.exponential(scale, (R, N)), 1.0, None, obs)
for t in range(2000): nmf_sweep(st, obs, hyper, rng)
rng = np.random.default_rng(seed)
betas = geometric_ladder(nrep, bmin)
reps = [nmf_state(st.A.copy(), st.W.copy(), st.tau, None, obs) for _ in range(nrep)]
tuner = LadderTuner(); parity = 0
mode = []; t0 = time.process_time(); rates = []
for t in range(tune + draws):
    for i, s in enumerate(reps): tempered_sweep(s, obs, hyper, rng, betas[i])
    ll = [log_likelihood(s, obs, hyper) for s in reps]
    prob, acc = swap_pass(reps, betas, ll, rng, parity); parity ^= 1
    if t < tune: tuner.record(prob); betas = tuner.maybe_retune(betas)
    else: rates.append(prob)
    if t % 5 == 0:
        dH, dL = dist(reps[0].W, reps_H), dist(reps[0].W, reps_L)
        mode.append(0 if dH < dL else 1)
    if t % 500 == 499:
        print(''.join('H' if dist(r.W, reps_H) < 4 else ('L' if dist(r.W, reps_L) < 4 else ('h' if dist(r.W, reps_H) < dist(r.W, reps_L) else 'l')) for r in reps[::2]), f"{betas[::8].round(2)}")
    if t % 1000 == 999:
        m = np.array(mode[-200:]); print(f"t {t+1} cpu {time.process_time()-t0:.0f} fracL(last 1000) {m.mean():.2f}", flush=True)
m = np.array(mode); post = m[tune // 5:]
print("switches post", int(np.abs(np.diff(post)).sum()), "fracL post", post.mean(), "swap", np.nanmean(rates, axis=0).mean().round(2))
