import sys, numpy as np, arviz as az
f = np.load(sys.argv[1]); C = int(sys.argv[2]) if len(sys.argv) > 2 else 4
ENT = ((400, 20), (0, 0), (100, 10))
A = np.stack([f[f"coldA{c}"] for c in range(C)]); W = np.stack([f[f"coldW{c}"] for c in range(C)])
tau = np.stack([f[f"tau{c}"] for c in range(C)])
r = {"tau": float(az.rhat(tau))}
for i, j in ENT:
    q = np.einsum("cdk,cdk->cd", A[:, :, i, :], W[:, :, :, j]); r[f"AW{i},{j}"] = float(az.rhat(q))
    print(f"AW[{i},{j}] chain means", q.mean(1).round(3))
print("rhat", {k: round(v, 4) for k, v in r.items()}, "max", round(max(r.values()), 4))
S = tau.shape[1]
for c in range(C):
    labs = f[f"labs{c}"]; ll = f[f"ll{c}"]; n = labs.shape[1]; T = labs.shape[0]
    pos = np.argsort(labs, axis=1)
    rt = 0; times = []
    for L in range(n):
        p = pos[T - S:, L]; state = None
        for t, x in enumerate(p):
            if x == n - 1: state = 'hot'; t0 = t
            elif x == 0 and state == 'hot': rt += 1; times.append(t - t0); state = None
    rate = np.nanmean(f[f"probs{c}"][T - S:], 0)
    print(f"chain {c}: hot->cold passages {rt} median {np.median(times) if times else None}; swap mean {np.nanmean(rate):.2f} min {rate.min():.2f}; cold ll by blocks {[round(x) for x in ll[T-S:, 0].reshape(10, -1).mean(1)]}")
