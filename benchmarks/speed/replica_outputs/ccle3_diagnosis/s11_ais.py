"""Forward AIS from mean-field references q_H, q_L to the CCLE rank-3 posterior: log-weight spread and log Z_H - log Z_L."""
import numpy as np, itertools, time, sys, math, argparse
from scipy.special import gammaln, log_ndtr
sys_argv = sys.argv; sys.argv = sys.argv[:1]
exec(open("s11_vpt.py").read().split("gam = ")[0].split("t0 = time.process_time()")[0])
t0 = time.process_time()
qL, stL = mode_run(7); qH, stH = mode_run(23)
def log_qn(st, q):  # normalized mean-field TN x Gamma
    zA = ((st.A - q["mA"]) / q["sA"]); zW = ((st.W - q["mW"]) / q["sW"])
    lnA = -0.5 * (zA ** 2).sum() - np.log(q["sA"]).sum() - 0.5 * math.log(2 * math.pi) * zA.size - log_ndtr(q["mA"] / q["sA"]).sum()
    lnW = -0.5 * (zW ** 2).sum() - np.log(q["sW"]).sum() - 0.5 * math.log(2 * math.pi) * zW.size - log_ndtr(q["mW"] / q["sW"]).sum()
    return lnA + lnW + q["a"] * math.log(q["b"]) - gammaln(q["a"]) + (q["a"] - 1) * math.log(st.tau) - q["b"] * st.tau
def log_pn(st):  # normalized prior x likelihood (exponential priors, Gamma tau)
    return (log_likelihood(st, obs, hy) + st.A.size * math.log(hy.lambda_A) - hy.lambda_A * st.A.sum()
            + st.W.size * math.log(hy.lambda_W) - hy.lambda_W * st.W.sum()
            + hy.alpha_tau * math.log(hy.beta_tau) - gammaln(hy.alpha_tau) + (hy.alpha_tau - 1) * math.log(st.tau) - hy.beta_tau * st.tau)
def draw_q(q, rng):
    from scipy.stats import truncnorm
    A = truncnorm.rvs(-q["mA"] / q["sA"], np.inf, loc=q["mA"], scale=q["sA"], random_state=rng)
    W = truncnorm.rvs(-q["mW"] / q["sW"], np.inf, loc=q["mW"], scale=q["sW"], random_state=rng)
    return nmf_state(A, W, rng.gamma(q["a"], 1 / q["b"]), None, obs)
plan = NMFPriorPlan(A=PriorTerms("external"), W=PriorTerms("external"), noise="external")
def sweep(st, g, q, rng):
    if g >= 1.0:
        nmf_sweep(st, obs, hy, rng); return
    tau = st.tau
    QA = (1 - g) / q["sA"] ** 2; LA = -g * hy.lambda_A + (1 - g) * q["mA"] / q["sA"] ** 2
    QW = ((1 - g) / q["sW"] ** 2).T.copy(); LW = (-g * hy.lambda_W + (1 - g) * q["mW"] / q["sW"] ** 2).T.copy()
    if g > 0:
        prior_nmf_sweep(st, obs, plan, rng, rates={}, update={"A", "W"}, external={"A": (QA, LA), "W": (QW, LW), "tau": g * tau})
    st.tau = float(_gamma(g * (hy.alpha_tau - 1 + n / 2) + (1 - g) * (q["a"] - 1) + 1, g * (hy.beta_tau + st.sse / 2) + (1 - g) * q["b"], rng))
K = int(sys_argv[1]); reps = int(sys_argv[2]); power = float(sys_argv[3])
gam = np.linspace(0, 1, K + 1) ** power
rng = np.random.default_rng(5)
for name, q in (("H", qH), ("L", qL)):
    lws = []; modes = []
    for rep in range(reps):
        st = draw_q(q, rng); lw = 0.0
        for k in range(1, K + 1):
            d = log_pn(st) - log_qn(st, q)
            lw += (gam[k] - gam[k - 1]) * d
            sweep(st, gam[k], q, rng)
        lws.append(lw); modes.append("H" if dist(st.W, qH["mW"]) < dist(st.W, qL["mW"]) else "L")
    lws = np.array(lws); m = lws.max()
    print(f"ref {name} K {K}: logZ {m + math.log(np.mean(np.exp(lws - m))):.2f} mean {lws.mean():.2f} sd {lws.std():.2f} modes {''.join(modes)} cpu {time.process_time()-t0:.0f}", flush=True)
