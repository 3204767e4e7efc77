import sys, numpy as np, warnings
import arviz as az
from bnmfzoo._results import build_datatree
from bnmfzoo.diagnostics import modes, angle_distance
f = np.load(sys.argv[1])
C = 4
A = np.stack([f[f"coldA{c}"] for c in range(C)]); W = np.stack([f[f"coldW{c}"] for c in range(C)])
tau = np.stack([f[f"tau{c}"] for c in range(C)])
ENT = ((400, 20), (0, 0), (100, 10))
print("rhat tau", float(az.rhat(tau)), "ess", float(az.ess(tau)))
for i, j in ENT:
    q = np.einsum("cdk,cdk->cd", A[:, :, i, :], W[:, :, :, j])
    print(f"AW[{i},{j}] rhat {float(az.rhat(q)):.4f} ess {float(az.ess(q)):.0f} chain means {q.mean(1).round(3)}")
S = tau.shape[1]
for frac in (0.25, 0.5, 1.0):
    s = int(S * frac)
    r = [float(az.rhat(tau[:, :s]))] + [float(az.rhat(np.einsum("cdk,cdk->cd", A[:, :s, i, :], W[:, :s, :, j]))) for i, j in ENT]
    print(f"first {s} draws: max rhat {max(r):.4f}")
print("tau chain means", tau.mean(1).round(4), "sd", tau.std(1).round(4))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    m = modes(build_datatree({"A": A, "W": W}), warn=False)["modes"]
print("modes weight", m["weight"].values.round(3), "cut", m.attrs["cut"])
print("chain_share\n", m["chain_share"].values.round(3))
print("angles\n", m["angle"].values.round(1))
for c in range(C):
    probs = f[f"probs{c}"]; lab = f[f"lab{c}"]; betas = f[f"betas{c}"]
    T = lab.size; tune = T - S
    rate = np.nanmean(probs[tune:], axis=0)
    print(f"chain {c}: swap rate mean {np.nanmean(rate):.3f} min {rate.min():.3f} (pair {rate.argmin()}) ; cold label changes (draws) {(np.diff(lab[tune:]) != 0).sum()}, distinct labels {np.unique(lab[tune:]).size}")
    hot = f[f"hotA{c}"][tune:]
    # does the hottest replica move: angle from its draw t to t+100, and to the cold chains' modes
    ref = m["reference"].values
    d = np.array([[angle_distance(h, r) for r in ref] for h in hot[::50]])
    print("   hot replica nearest mode over time:", d.argmin(1)[::4].tolist(), "min dist med", np.median(d.min(1)).round(1))
    ll = f[f"ll{c}"][tune:]
    print("   loglik cold mean", ll[:, 0].mean().round(1), "hot mean", ll[:, -1].mean().round(1), " betas", betas[[0,1,2,-2,-1]].round(4))
