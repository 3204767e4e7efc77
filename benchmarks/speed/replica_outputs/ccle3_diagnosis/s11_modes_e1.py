import numpy as np, itertools, time
from bnmfzoo import datasets
from bnmfzoo.models import exponential_gaussian
from bnmfzoo.models._spec import get_spec
from bnmfzoo.inference.gaussian._core import nmf_state, observed_entries, nmf_sweep
from bnmfzoo.inference.gaussian._tempering import log_likelihood
X = datasets.load_ccle("ic50"); R = 3
spec = get_spec(exponential_gaussian(X, R), families="exponential_gaussian", method="x")
hyper = spec.hyper; obs = observed_entries(spec.X, spec.mask)
D, N = X.shape; print(D, N, obs.n_observed)
scale = np.sqrt(np.nanmean(np.asarray(X)) / R)
def wdir(W):
    return W / np.linalg.norm(W, axis=1, keepdims=True)
def dist(W1, W2):
    a, b = wdir(W1), wdir(W2)
    return min(np.degrees(np.mean([np.arccos(np.clip(a[i] @ b[p[i]], -1, 1)) for i in range(R)]))
               for p in itertools.permutations(range(R)))
res = []
t0 = time.process_time()
for s in range(24):
    rng = np.random.default_rng([99, s])
    st = nmf_state(rng.exponential(scale, (D, R)), rng.exponential(scale, (R, N)), 1.0, None, obs)
    lls = []; Ws = []
    for t in range(3000):
        nmf_sweep(st, obs, hyper, rng)
        if t >= 2000: lls.append(log_likelihood(st, obs, hyper)); Ws.append(st.W.copy())
    res.append((np.mean(lls), np.mean(Ws, axis=0), (st.A @ st.W)[400, 20]))
print("cpu", time.process_time() - t0)
order = np.argsort([-r[0] for r in res])
for i in order:
    print(f"start {i:2d} ll {res[i][0]:9.1f} AW {res[i][2]:.2f} dist to best {dist(res[i][1], res[order[0]][1]):5.1f}")
np.save("./e1_W.npy", np.array([r[1] for r in res])); np.save("./e1_ll.npy", np.array([r[0] for r in res]))
