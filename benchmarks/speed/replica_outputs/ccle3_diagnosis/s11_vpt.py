"""Two-reference parallel tempering on CCLE rank 3: q_L arm -> posterior <- q_H arm."""
import numpy as np, itertools, time, sys, math, argparse
from scipy.special import gammaln
from bnmfzoo import datasets
from bnmfzoo.models import exponential_gaussian
from bnmfzoo.models._spec import get_spec
from bnmfzoo.inference.gaussian._core import nmf_state, observed_entries, nmf_sweep, _gamma
from bnmfzoo.inference.gaussian._tempering import log_likelihood
from bnmfzoo.inference.gaussian._prior_core import prior_nmf_sweep, NMFPriorPlan, PriorTerms
ap = argparse.ArgumentParser()
ap.add_argument("--arm", type=int, default=16); ap.add_argument("--gmin", type=float, default=1e-3)
ap.add_argument("--steps", type=int, default=3000); ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--start", default="L"); ap.add_argument("--tune", type=int, default=0); ap.add_argument("--space", default="geom")
a = ap.parse_args()
X = datasets.load_ccle("ic50"); R = 3
spec = get_spec(exponential_gaussian(X, R), families="exponential_gaussian", method="x")
hy = spec.hyper; obs = observed_entries(spec.X, spec.mask); n = obs.n_observed
D, N = X.shape; scale = np.sqrt(np.nanmean(np.asarray(X)) / R)
def wdir(W): return W / np.linalg.norm(W, axis=1, keepdims=True)
def dist(W1, W2):
    a_, b_ = wdir(W1), wdir(W2)
    return min(np.degrees(np.mean([np.arccos(np.clip(a_[i] @ b_[p[i]], -1, 1)) for i in range(R)])) for p in itertools.permutations(range(R)))
def mode_run(s):
    rng = np.random.default_rng([99, s])
    st = nmf_state(rng.exponential(scale, (D, R)), rng.exponential(scale, (R, N)), 1.0, None, obs)
    for _ in range(2000): nmf_sweep(st, obs, hy, rng)
    As, Ws, ts = [], [], []
    for _ in range(3000):
        nmf_sweep(st, obs, hy, rng); As.append(st.A.copy()); Ws.append(st.W.copy()); ts.append(st.tau)
    As, Ws, ts = np.array(As), np.array(Ws), np.array(ts)
    m, v = ts.mean(), ts.var()
    q = dict(mA=As.mean(0), sA=As.std(0) + 1e-6, mW=Ws.mean(0), sW=Ws.std(0) + 1e-6, a=m * m / v, b=m / v)
    return q, st
t0 = time.process_time()
qL, stL = mode_run(7); qH, stH = mode_run(23)
print("q fitted cpu", round(time.process_time() - t0), flush=True)
refW = {"L": qL["mW"], "H": qH["mW"]}
def log_ptilde(st):
    return log_likelihood(st, obs, hy) - hy.lambda_A * st.A.sum() - hy.lambda_W * st.W.sum() + (hy.alpha_tau - 1) * math.log(st.tau) - hy.beta_tau * st.tau
def log_q(st, q):
    return (-0.5 * (((st.A - q["mA"]) / q["sA"]) ** 2).sum() - 0.5 * (((st.W - q["mW"]) / q["sW"]) ** 2).sum()
            + (q["a"] - 1) * math.log(st.tau) - q["b"] * st.tau)
plan = NMFPriorPlan(A=PriorTerms("external"), W=PriorTerms("external"), noise="external")
def sweep(st, g, q, rng):
    if g >= 1.0:
        nmf_sweep(st, obs, hy, rng); return
    tau = st.tau
    QA = (1 - g) / q["sA"] ** 2; LA = -g * hy.lambda_A + (1 - g) * q["mA"] / q["sA"] ** 2
    QW = ((1 - g) / q["sW"] ** 2).T.copy(); LW = (-g * hy.lambda_W + (1 - g) * q["mW"] / q["sW"] ** 2).T.copy()
    prior_nmf_sweep(st, obs, plan, rng, rates={}, update={"A", "W"}, external={"A": (QA, LA), "W": (QW, LW), "tau": g * tau})
    st.tau = float(_gamma(g * (hy.alpha_tau - 1 + n / 2) + (1 - g) * (q["a"] - 1) + 1, g * (hy.beta_tau + st.sse / 2) + (1 - g) * q["b"], rng))
gam = np.geomspace(a.gmin, 1.0, a.arm + 1)[:-1] if a.space == "geom" else np.linspace(0, 1, a.arm + 1)[:-1] ** 2 + a.gmin
rungs = [("L", g) for g in gam] + [("P", 1.0)] + [("H", g) for g in gam[::-1]]
Q = {"L": qL, "H": qH}
rng = np.random.default_rng(a.seed)
init = stL if a.start == "L" else stH
states = [nmf_state(src.A.copy(), src.W.copy(), src.tau, None, obs) for src in [(stH if r == "H" else (init if r == "P" else stL)) for r, g in rungs]]
def logpi(j, comps):
    r, g = rungs[j]
    lp, lqL, lqH = comps
    if r == "P": return lp
    return g * lp + (1 - g) * (lqL if r == "L" else lqH)
M = len(rungs); c = a.arm; parity = 0; acc = np.zeros(M - 1); prop = np.zeros(M - 1)
modes = []; labels = list(range(M)); t0 = time.process_time()
for t in range(a.steps):
    for j, st in enumerate(states):
        r, g = rungs[j]; sweep(st, g, Q.get(r, qL), rng)
    comps = [(log_ptilde(s), log_q(s, qL), log_q(s, qH)) for s in states]
    for j in range(parity, M - 1, 2):
        lr = logpi(j, comps[j + 1]) + logpi(j + 1, comps[j]) - logpi(j, comps[j]) - logpi(j + 1, comps[j + 1])
        p = 1.0 if lr >= 0 else math.exp(lr); prop[j] += 1; acc[j] += p
        if rng.random() < p:
            states[j], states[j + 1] = states[j + 1], states[j]; comps[j], comps[j + 1] = comps[j + 1], comps[j]
            labels[j], labels[j + 1] = labels[j + 1], labels[j]
    parity ^= 1
    s0 = states[c]
    modes.append("H" if dist(s0.W, refW["H"]) < dist(s0.W, refW["L"]) else "L")
    if t % 500 == 499:
        print("".join("H" if dist(s.W, refW["H"]) < dist(s.W, refW["L"]) else "L" for s in states), "junction rates", np.round((acc/np.maximum(prop,1))[c-3:c+3], 3))
    if t % 250 == 249:
        m = np.array(modes); sw = int((m[1:] != m[:-1]).sum())
        print(f"t {t+1} cpu {time.process_time()-t0:.0f} fracH {np.mean(m == 'H'):.3f} switches {sw} swap rates min {np.min(acc/np.maximum(prop,1)):.2f} "
              f"L-arm {np.round(acc[:c]/np.maximum(prop[:c],1),2)} H-arm {np.round(acc[c:]/np.maximum(prop[c:],1),2)}", flush=True)
