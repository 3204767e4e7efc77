"""Calibration of P(K | data) and of the reference-assignment probabilities over many cohorts.

Run from the project root::

    nice -n 10 .venv/bin/python -m benchmarks.signatures.calibration [--quick]
        [--method compressive|chib] [--designs flat flat_nb] [--cohorts 20] [--genomes 100]
        [--span 2] [--likelihood nb|poisson] [--a 1|random] [--epsilon 0.001]
        [--seed-start 0] [--strength unit] [--burn 2000] [--keep 1000]
        [--prior de_novo|reference] [--novel 5] [--drop SBS7c] [--beta-scale 1]

For each design, ``--cohorts`` cohorts (seeds 0, 1, ...) of
:func:`bnmfzoo.datasets.signature_cohorts.signature_cohort` (``--genomes`` genomes,
``--burden`` median mutations, Poisson counts) are given to the rank posterior of ``--method``:
``chib``, :func:`bnmfzoo.signatures.evidence.rank_posterior` over the ranks ``K_true - span ..
K_true + span`` (uniform prior over them); ``compressive``,
:func:`bnmfzoo.signatures.compressive.compressive_rank_posterior` with the workflow's defaults
(4 chains of 2,000 + 1,000 sweeps, ``--burn`` and ``--keep``, at ``min(2 (K_true + span), 20)``
signatures; counts negative binomial by default, the workflow's, ``--likelihood poisson``
otherwise), whose probabilities cover every rank (those no draw visits count as 0 here; the
library reports them as bounds). The compressive prior's hyperparameters are Zito & Miller
(2024)'s defaults (``--a 1 --epsilon 0.001``), not tuned: the sweeps were chosen on cohorts of
other seeds (1000 and up). Then:

* **credible sets of ranks**: the smallest set of ranks (most probable first) whose probability
  reaches ``level`` contains the true K in about ``level`` of the cohorts if the probabilities
  are calibrated; printed for levels 0.5, 0.8, 0.9, 0.95 with the binomial standard error
  ``sqrt(q (1 - q) / n)`` of the observed coverage ``q``;
* **reliability of every reported probability**: all (cohort, rank) pairs binned by their
  probability; in each bin the mean probability beside the fraction of pairs whose rank is the
  truth (with its binomial standard error and 90% Clopper-Pearson interval);
* **reference assignment**: at the most probable rank, the posterior draws of the best run are
  assigned to COSMIC v3.4 (:func:`bnmfzoo.signatures.assignment.assign`); each extracted
  signature is paired one to one with a true signature (Hungarian on cosine), and every
  (signature, reference) probability is scored against "this reference signature is the
  paired true one" (*correct*). Binned as above, for every pair and for the reported best
  match alone (its probability against whether it is the paired true signature); extracted
  signatures without a true partner are counted, not scored. Each table's expected
  calibration error, ``sum_b (n_b / n) |mean p_b - frequency_b|`` over the bins (Naeini,
  Cooper and Hauskrecht 2015), is printed and saved.

``--prior reference``: the compressive route with the prior informed by COSMIC v3.4
(:mod:`bnmfzoo.signatures.compressive`, ``reference=``: its 86 SBS signatures centred at Zito &
Miller's concentrations, plus ``--novel`` de novo ones), the reference given to the model
without the signatures named by ``--drop`` (a true signature left out must then be picked up
by a de novo component; ``--beta-scale`` multiplies every concentration). The assignment is
always scored against the full COSMIC v3.4.

A design name ending in ``_nb`` (``flat_nb``) is that design with negative binomial counts
(``overdispersion=20``). Ranks the variational screen leaves out, or whose estimate is
unreliable, have no probability: they are in no credible set and out of the reliability
table, and the number of cohorts whose true K got no probability is printed.

Results go to ``benchmarks/results/signatures_calibration.json`` (``--out``), and each cohort's
record, with its assignment pairs, to the same name with ``.jsonl`` as soon as it finishes.
The cost is that of ``rank_posterior`` (two Chib runs per rank) times cohorts times ranks, or
of the compressive run (about 35 CPU s per cohort of 100 genomes with the negative binomial,
4-5 s per cohort of 20 genomes): ``--quick`` (5 cohorts of 40 genomes, ranks
K +- 1) is a smoke run, not a calibration.
"""

import argparse
import json
import time
import warnings

import numpy as np

from benchmarks._common import RESULTS
from bnmfzoo.datasets.signature_cohorts import signature_cohort

LEVELS = (0.5, 0.8, 0.9, 0.95)
BINS = (0.0, 0.05, 0.2, 0.4, 0.6, 0.8, 0.95, 1.0001)


def credible_set(ranks, probs, level):
    """Most probable ranks first until ``level``; ranks without a probability (not evaluated
    or unreliable, NaN) are in no set."""
    probs = np.nan_to_num(np.asarray(probs, float), nan=0.0)
    order = np.argsort(-probs, kind="stable")
    cum = np.cumsum(probs[order])
    n = int(np.searchsorted(cum, level - 1e-12) + 1)
    return [int(ranks[i]) for i in order[:n]]


def binomial_interval(k, n, level=0.9):
    """Clopper-Pearson interval of a binomial proportion ``k / n``."""
    from scipy.stats import beta

    lo = beta.ppf((1 - level) / 2, k, n - k + 1) if k > 0 else 0.0
    hi = beta.ppf((1 + level) / 2, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


def reliability(p, hit):
    p, hit = np.asarray(p, float), np.asarray(hit, float)
    rows = []
    for lo, hi in zip(BINS[:-1], BINS[1:]):
        sel = (p >= lo) & (p < hi)
        n = int(sel.sum())
        if n:
            q = hit[sel].mean()
            ci = binomial_interval(int(hit[sel].sum()), n)
            rows.append(dict(bin=f"[{lo:.2f}, {min(hi, 1):.2f})", n=n, mean_p=float(p[sel].mean()),
                             frequency=float(q), se=float(np.sqrt(max(q * (1 - q), 1e-12) / n)),
                             ci90=ci))
    return rows


def ece(p, hit):
    """Expected calibration error over :data:`BINS`: ``sum_b (n_b / n) |mean p_b - freq_b|``
    (Naeini et al. 2015)."""
    p, hit = np.asarray(p, float), np.asarray(hit, float)
    return float(sum(row["n"] * abs(row["mean_p"] - row["frequency"])
                     for row in reliability(p, hit)) / len(p))


def _fmt(x):
    return "none" if x is None else f"{x:.4f}"


def _print_reliability(rows):
    print("| bin of p | pairs | mean p | fraction correct (se) | 90% interval |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['bin']} | {row['n']} | {row['mean_p']:.3f} | {row['frequency']:.3f} "
              f"({row['se']:.3f}) | {row['ci90'][0]:.3f}-{row['ci90'][1]:.3f} |")


def _compressive_table(counts, ranks, seed, likelihood="poisson", a=1.0, epsilon=1e-3,
                       strength=None, sweeps=(2000, 1000), prior_reference=None, n_novel=5,
                       beta_scale=1.0):
    from bnmfzoo.signatures.compressive import compressive_rank_posterior, reference_concentration

    beta = None
    if prior_reference is not None and beta_scale != 1.0:
        beta = beta_scale * reference_concentration(prior_reference)

    table = compressive_rank_posterior(counts, ranks, random_seed=seed, n_burn=sweeps[0],
                                       n_keep=sweeps[1], thin=5, likelihood=likelihood, a=a,
                                       epsilon=epsilon, strength=strength,
                                       reference=prior_reference, n_novel=n_novel, beta=beta)
    table["evaluated"] = True
    table["log_evidence"] = table["se"] = np.nan
    table["probability"] = table["probability"].fillna(0.0)
    return table


def one_cohort(design, seed, *, genomes, burden, span, n_runs, reference,
               method="compressive", likelihood="poisson", a=1.0, epsilon=1e-3, strength=None,
               sweeps=(2000, 1000), prior="de_novo", n_novel=5, drop=(), beta_scale=1.0):
    from scipy.optimize import linear_sum_assignment

    from bnmfzoo.signatures.assignment import align_draws, assign, normalize_draws
    from bnmfzoo.signatures.evidence import rank_posterior

    base, nb = (design[:-3], 20.0) if design.endswith("_nb") else (design, None)
    c = signature_cohort(base, n_genomes=genomes, burden_median=burden, overdispersion=nb,
                         random_seed=seed)
    K = c.rank
    ranks = list(range(max(1, K - span), K + span + 1))
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "compressive":
            given = None
            if prior == "reference":  # COSMIC without the dropped ones, in the cohort's order
                keep = [s for s in reference.signature.values if str(s) not in set(drop)]
                given = reference.sel(signature=keep, channel=c.counts.coords["col"].values
                                      ).values.T
            table = _compressive_table(c.counts.values, ranks, seed, likelihood, a, epsilon,
                                       strength, sweeps, given, n_novel, beta_scale)
            ranks = [int(k) for k in table["rank"]]
            if K not in ranks:  # the truth is always a scored rank (probability 0 if unvisited)
                ranks.append(K)
                table.loc[len(table), ["rank", "probability", "low", "high"]] = (K, 0.0, 0.0,
                                                                               np.nan)
        else:
            table = rank_posterior(c.counts.values, ranks, n_runs=n_runs, random_seed=seed,
                                   block_burn=20, block_keep=150)
    phi = table.attrs.get("phi")
    a_draws = table.attrs.get("a")
    if method != "compressive":
        likelihood = "poisson"  # Chib's route has the Poisson likelihood only
    counts = table.attrs.get("counts")
    out = dict(seed=seed, K_true=K, ranks=ranks, method=method, likelihood=likelihood,
               prior=prior, dropped=list(drop), n_novel=n_novel if prior == "reference" else None,
               beta_scale=beta_scale if prior == "reference" else None,
               strength=strength, sweeps=list(sweeps), rhat=table.attrs.get("rhat"),
               chain_counts=None if counts is None else [
                   {int(k): int(n) for k, n in zip(*np.unique(ch, return_counts=True))}
                   for ch in counts],
               phi_median=None if phi is None else float(np.median(phi)),
               a_median=None if a_draws is None else float(np.median(a_draws)),
               a_interval=None if a_draws is None else [
                   float(v) for v in np.quantile(a_draws, [0.05, 0.95])],
               probability=[float(v) for v in table["probability"]],
               evaluated=[bool(v) for v in table["evaluated"]],
               log_evidence=[float(v) for v in table["log_evidence"]],
               se=[float(v) for v in table["se"]],
               low=[float(v) for v in table["low"]], high=[float(v) for v in table["high"]],
               active_reference=None if prior != "reference" else {
                   str(n): round(float(v), 3) for n, v in zip(keep, table.attrs["activity"])
                   if v > 0.05},
               novel_activity=None if prior != "reference" else [
                   round(float(v), 3) for v in table.attrs["activity"][len(keep):]],
               note=table.attrs["note"], cpu=time.process_time() - t0, assignment=[],
               assignment_top=[])
    T_draws, V_draws = table.attrs["draws"]
    if T_draws is None or T_draws.shape[-1] == 0:  # no draw, or no active signature
        return out
    sig, expo = normalize_draws(T_draws, V_draws)
    sig, _, _ = align_draws(sig, expo)
    _, probs = assign(sig, reference, cutoff=0.9)
    mean = sig.mean(axis=0)
    truth = c.signatures.values
    cos = (mean / np.linalg.norm(mean, axis=1, keepdims=True)) @ (
        truth / np.linalg.norm(truth, axis=1, keepdims=True)).T
    rows, cols = linear_sum_assignment(-cos)
    names = [str(v) for v in probs.coords[probs.dims[1]].values]
    true_names = [str(v) for v in c.signatures.signature.values]
    for k, t in zip(rows, cols):
        for j, name in enumerate(names):
            out["assignment"].append((float(probs.values[k, j]), int(name == true_names[t])))
    paired = dict(zip(rows.tolist(), cols.tolist()))
    for k in range(len(mean)):  # the reported best match of every extracted signature
        j = int(np.argmax(probs.values[k]))
        t = paired.get(k)
        out["assignment_top"].append(dict(
            best=names[j], p=float(probs.values[k, j]),
            truth=None if t is None else true_names[t],
            cosine_to_truth=None if t is None else float(cos[k, t]),
            correct=bool(t is not None and names[j] == true_names[t])))
    return out


def summarize(design, cohorts, method, genomes):
    """Print and return the coverage, reliability and assignment tables of ``cohorts``."""
    n = len(cohorts)
    print(f"\n## {design} ({method}): {n} cohorts of {genomes} genomes")
    print("| level | coverage of the credible set | se | 90% interval | mean set size |")
    print("|---|---|---|---|---|")
    cover = {}
    for lev in LEVELS:
        sets = [credible_set(r["ranks"], r["probability"], lev) for r in cohorts]
        hits = int(sum(r["K_true"] in s for r, s in zip(cohorts, sets)))
        q = hits / n
        se = float(np.sqrt(max(q * (1 - q), 1e-12) / n))
        ci = binomial_interval(hits, n)
        cover[lev] = dict(coverage=q, se=se, ci90=ci,
                          size=float(np.mean([len(s) for s in sets])))
        print(f"| {lev} | {q:.2f} | {se:.2f} | {ci[0]:.2f}-{ci[1]:.2f} | "
              f"{cover[lev]['size']:.2f} |")
    rhats = [r.get("rhat") for r in cohorts]
    bad = sum(v is not None and not (v <= 1.05) for v in rhats)
    cpu = [r["cpu"] for r in cohorts]
    print(f"\nR-hat of the active counts above 1.05 (chains not converged): {bad} of {n}; "
          f"CPU s per cohort {np.mean(cpu):.0f} (range {min(cpu):.0f}-{max(cpu):.0f})")
    print("P(true K) per cohort (seed: probability, R-hat): " + "; ".join(
        f"{r['seed']}: {r['probability'][r['ranks'].index(r['K_true'])]:.3f}, "
        f"{r.get('rhat') or float('nan'):.2f}" for r in cohorts))
    # reliability over the ranks that got a probability; how often the truth got none
    p_all = [pr for r in cohorts for pr in r["probability"] if np.isfinite(pr)]
    hit = [int(k == r["K_true"]) for r in cohorts
           for k, pr in zip(r["ranks"], r["probability"]) if np.isfinite(pr)]
    missed = sum(not np.isfinite(r["probability"][r["ranks"].index(r["K_true"])])
                 for r in cohorts)
    print(f"\ntrue K without a probability (not evaluated or unreliable): {missed} of {n}")
    rel = reliability(p_all, hit)
    print("\nreliability of P(K) (every rank of every cohort; correct = the rank is the "
          "true K):")
    _print_reliability(rel)
    print(f"expected calibration error of P(K): {ece(p_all, hit):.3f}")
    pa = [x for r in cohorts for x, _ in r["assignment"]]
    ha = [h for r in cohorts for _, h in r["assignment"]]
    rel_a = reliability(pa, ha) if pa else []
    print("\nreliability of the assignment probabilities: every (extracted signature paired "
          "with a true one, reference signature) pair; correct = the reference is the paired "
          "true signature")
    _print_reliability(rel_a)
    top = [t for r in cohorts for t in r["assignment_top"] if t["truth"] is not None]
    pt, ht = [t["p"] for t in top], [int(t["correct"]) for t in top]
    rel_t = reliability(pt, ht) if top else []
    print("\nreliability of the reported best match (its probability against whether it is "
          "the paired true signature):")
    _print_reliability(rel_t)
    unpaired = sum(t["truth"] is None for r in cohorts for t in r["assignment_top"])
    unmatched = sum(r["K_true"] - sum(t["truth"] is not None for t in r["assignment_top"])
                    for r in cohorts)
    ece_a, ece_t = (ece(pa, ha) if pa else None), (ece(pt, ht) if top else None)
    print(f"expected calibration error: all pairs {_fmt(ece_a)}, best match {_fmt(ece_t)}; "
          f"extracted signatures without a true partner (surplus, not scored) {unpaired}; true "
          f"signatures without an extracted partner {unmatched}")
    return dict(cohorts=[{k: v for k, v in r.items() if k != "assignment"}
                                    for r in cohorts],
                           coverage=cover, reliability=rel, ece=ece(p_all, hit),
                           assignment_reliability=rel_a, assignment_ece=ece_a,
                           best_match_reliability=rel_t, best_match_ece=ece_t,
                           surplus_signatures=int(unpaired),
                           true_signatures_unmatched=int(unmatched),
                           true_rank_without_probability=int(missed))


def _shape_arg(text):
    return "random" if text == "random" else float(text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--designs", nargs="+", default=["flat"])
    p.add_argument("--cohorts", type=int, default=20)
    p.add_argument("--genomes", type=int, default=100)
    p.add_argument("--burden", type=float, default=2000.0)
    p.add_argument("--span", type=int, default=2)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--method", choices=("compressive", "chib"), default="compressive")
    p.add_argument("--likelihood", choices=("poisson", "nb"), default="nb",
                   help="compressive route: the counts' likelihood (default nb, the workflow's)")
    p.add_argument("--seed-start", type=int, default=0, help="first cohort seed")
    p.add_argument("--a", type=_shape_arg, default=1.0,
                   help="compressive route: Gamma shape of the exposures (Zito & Miller: 1), "
                        "or 'random': learned, a ~ Gamma(1, 1) (the authors' random-a option)")
    p.add_argument("--epsilon", type=float, default=1e-3,
                   help="compressive route: prior mean of mu_k (Zito & Miller: 0.001)")
    p.add_argument("--strength", type=lambda t: t if t == "unit" else float(t), default=None,
                   help="compressive route: compression strength c apart from the exposures' "
                        "shape, mu_k ~ InvGamma(c N + 1, epsilon c N), or 'unit': c = 1 / N "
                        "(default: c = a)")
    p.add_argument("--burn", type=int, default=2000,
                   help="compressive route: burn-in sweeps per chain (the workflow's 2,000)")
    p.add_argument("--keep", type=int, default=1000,
                   help="compressive route: kept sweeps per chain, thinned by 5 (1,000)")
    p.add_argument("--prior", choices=("de_novo", "reference"), default="de_novo",
                   help="compressive route: every signature de novo (default), or the prior "
                        "informed by COSMIC v3.4 (Zito & Miller's informative version)")
    p.add_argument("--novel", type=int, default=5,
                   help="--prior reference: de novo signatures beside the reference (5)")
    p.add_argument("--drop", nargs="*", default=[],
                   help="--prior reference: signatures left out of the reference given to the "
                        "model (e.g. SBS7c)")
    p.add_argument("--beta-scale", type=float, default=1.0,
                   help="--prior reference: times Zito & Miller's concentrations (1)")
    p.add_argument("--out", default=str(RESULTS / "signatures_calibration.json"))
    p.add_argument("--summarize", default=None, metavar="JSONL",
                   help="only print the tables of the cohorts recorded in JSONL (a run's .jsonl, "
                        "e.g. one stopped early), one table per design")
    a = p.parse_args(argv)
    if a.summarize:
        with open(a.summarize) as fh:
            records = [json.loads(line) for line in fh if line.strip()]
        for design in dict.fromkeys(r["design"] for r in records):
            summarize(design, [r for r in records if r["design"] == design],
                      records[0]["method"], "the run's")
        return
    if a.quick:
        a.cohorts, a.genomes, a.span = 5, 40, 1
    from bnmfzoo.datasets import load_cosmic_signatures

    ref = load_cosmic_signatures("v3.4").rename(row="signature", col="channel")
    results = {}
    for design in a.designs:
        cohorts = []
        for seed in range(a.seed_start, a.seed_start + a.cohorts):
            r = one_cohort(design, seed, genomes=a.genomes, burden=a.burden, span=a.span,
                           n_runs=a.runs, reference=ref, method=a.method,
                           likelihood=a.likelihood, a=a.a, epsilon=a.epsilon,
                           strength=a.strength, sweeps=(a.burn, a.keep), prior=a.prior,
                           n_novel=a.novel, drop=tuple(a.drop), beta_scale=a.beta_scale)
            cohorts.append(r)
            RESULTS.mkdir(parents=True, exist_ok=True)
            with open(a.out + "l", "a") as fh:  # one line per cohort as it finishes (.jsonl)
                fh.write(json.dumps(dict(design=design, **r)) + "\n")
            probs = np.asarray(r["probability"], float)
            top = (r["ranks"][int(np.nanargmax(probs))] if np.isfinite(probs).any()
                   else "none reliable")
            shape = ("" if r["a_median"] is None else
                     f", a {r['a_median']:.3g} ({r['a_interval'][0]:.3g}-"
                     f"{r['a_interval'][1]:.3g})")
            print(f"{design} seed {seed}: K true {r['K_true']}, most probable {top}, "
                  f"P(K true) = {r['probability'][r['ranks'].index(r['K_true'])]:.3f}"
                  f"{shape}, CPU {r['cpu']:.0f} s", flush=True)
        results[design] = summarize(design, cohorts, a.method, a.genomes)
        RESULTS.mkdir(parents=True, exist_ok=True)
        with open(a.out, "w") as fh:
            json.dump(dict(args=vars(a), results=results), fh, indent=1)
    print(f"\nwritten: {a.out}")


if __name__ == "__main__":
    main()
