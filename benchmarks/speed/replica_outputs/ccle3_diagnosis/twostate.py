"""R-hat of a two-mode quantity when chains switch modes at rate k per step (50/50 masses):
the number of switches per chain needed for max R-hat <= 1.01."""
import numpy as np, arviz as az
rng = np.random.default_rng(0)
S = 4000
for n_sw in (2, 5, 10, 25, 50, 100, 200, 400):
    k = n_sw / S
    r = []
    for rep in range(100):
        x = np.empty((4, S))
        for c in range(4):
            s = rng.random() < 0.5
            flips = rng.random(S) < k
            x[c] = (s ^ (np.cumsum(flips) % 2).astype(bool)) + 0.3 * rng.standard_normal(S)
        r.append(float(az.rhat(x)))
    r = np.array(r)
    print(f"switches/chain {n_sw:4d}: median R-hat {np.median(r):.4f}, P(R-hat <= 1.01) {np.mean(r <= 1.01):.2f}")
