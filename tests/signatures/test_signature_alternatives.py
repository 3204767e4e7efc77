"""Alternative signature sets with masses (:mod:`bnmfzoo.signatures.alternatives`).

The cohort has two exact, clearly different factorizations: Laurberg's 6 x 6 rank-3 matrix at
``a = 1/2`` (channels x samples, times 400 mutations) has the
second factorization ``(A Q, Q W)``, and that one is a permutation of the first's rows and
columns (``A Q = A[SWAP]``, ``Q W = W[:, SWAP]``); at 400 mutations per unit the two are
well separated. The Poisson counts are drawn once per orbit
of that permutation and copied to the image cell, so the counts are *exactly* invariant; the
Gamma-Poisson NMF posterior (i.i.d. Gamma priors) is then invariant under the swap, which
exchanges the two factorizations: each holds exactly half of the posterior mass.
"""

import math
import os
import re
import time

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from bnmfzoo.datasets import laurberg
from bnmfzoo.signatures.alternatives import (
    ALTERNATIVE_COLUMNS,
    alternative_signatures,
    alternatives_bytes,
    alternatives_from_masses,
    alternatives_table,
)

SWAP = np.array([3, 4, 5, 0, 1, 2])
#: small SMC settings: both factorizations were reached in 20 of 20 seeds (0-19), 2 CPU s each
FAST = {"n_runs": 2, "n_particles": 20, "n_moves": 2, "check": None}
#: the per-cohort scan's seeds (cohort noise and SMC), run with ``BNMFZOO_SEED_SCAN=1``
SEEDS = range(100, 120)


def symmetric_cohort(scale=400.0, tiles=1, seed=0):
    """``(counts samples x channels, reference of the six exact signatures)``."""
    d = laurberg(0.5)
    X0 = np.tile(np.asarray(d.X, float), (1, tiles)) * scale
    D, N = X0.shape
    cols = (np.arange(N) // 6) * 6 + SWAP[np.arange(N) % 6]
    Y = np.random.default_rng(seed).poisson(X0).astype(float)
    for i in range(D):
        for j in range(N):
            if (i, j) < (SWAP[i], cols[j]):
                Y[SWAP[i], cols[j]] = Y[i, j]
    assert (Y[np.ix_(SWAP, cols)] == Y).all()
    sigs = np.vstack([d.solutions[0][0].T, d.solutions[1][0].T])  # (6, 6): rows = signatures
    ref = xr.DataArray(sigs / sigs.sum(1, keepdims=True), dims=("signature", "channel"),
                       coords={"signature": ["P1", "P2", "P3", "Q1", "Q2", "Q3"],
                               "channel": [f"c{i}" for i in range(6)]})
    counts = xr.DataArray(Y.T, dims=("row", "col"),
                          coords={"row": [f"s{j}" for j in range(N)],
                                  "col": [f"c{i}" for i in range(6)]})
    return counts, ref


@pytest.fixture(scope="module")
def cohort():
    return symmetric_cohort()


@pytest.fixture(scope="module")
def masses(cohort):
    """One SMC run on the cohort at K = 3 (the model alternative_signatures builds)."""
    from bnmfzoo.inference import smc_mode_masses
    from bnmfzoo.models import poisson

    counts, _ = cohort
    b = math.sqrt(3 / counts.values.mean())
    return smc_mode_masses(poisson(counts.values.T, 3, a=1.0, b=b), random_seed=0, **FAST)


@pytest.fixture(scope="module")
def alt(cohort, masses):
    counts, ref = cohort
    return alternatives_from_masses(masses, counts, ref, random_seed=0)


def test_both_factorizations_listed_with_masses(alt):
    reached = alt.sel(alternative=alt["reached"])
    assert list(reached["alternative"].values) == ["Alt1", "Alt2"]
    # each alternative is one exact factorization: its three best matches are P1-P3 or Q1-Q3
    sets = [set(m[0] for m in reached["best_match"].sel(alternative=a).values)
            for a in ("Alt1", "Alt2")]
    assert sorted(map(sorted, sets)) == [["P"], ["Q"]]
    assert (reached["cosine"] > 0.99).all()
    # the two sets differ: each signature of Alt2 is at cosine < 0.9 to every one of Alt1
    assert (reached["cosine_to_first"].sel(alternative="Alt2") < 0.9).all()
    np.testing.assert_allclose(reached["cosine_to_first"].sel(alternative="Alt1"), 1.0)
    # masses: shares among reached modes, each in (0, 1), summing to at most 1
    m = reached["mass"].values
    assert ((m > 0) & (m < 1)).all() and m.sum() <= 1 + 1e-12
    assert alt.attrs["mass_listed"] == pytest.approx(m.sum())
    # the unknown remainder is stated, never zero
    assert math.isnan(float(alt["mass"].sel(alternative="unknown")))
    assert "unknown, not zero" in alt.attrs["unknown"]
    # no check was run: not established, and the statement says why
    assert alt.attrs["established"] is False and "no check" in alt.attrs["statement"]
    # what was tried and what to run next, in numbers a user can copy
    assert alt.attrs["tried"].startswith("tried 2 SMC runs x 20 particles, 2 sweeps per move")
    assert "check none, 2 mode(s) found" in alt.attrs["tried"]
    assert alt.attrs["next"].startswith("Next: run the check (check='auto'")
    assert "K = 3" in alt.attrs["model"] and "not the compressive" in alt.attrs["model"]
    # signatures are distributions over the channels
    sig = reached["signatures"].values
    np.testing.assert_allclose(sig.sum(-1), 1.0)


def test_alternatives_tsv_format(alt):
    text = alternatives_bytes(alt).decode()
    lines = text.splitlines()
    assert lines[0].split("\t") == ALTERNATIVE_COLUMNS
    t = pd.read_csv(pd.io.common.StringIO(text), sep="\t", keep_default_na=False)
    assert list(t["alternative"]) == ["Alt1"] * 3 + ["Alt2"] * 3 + ["unknown"]
    assert list(t["signature"][:3]) == ["Sig1", "Sig2", "Sig3"]
    unknown = t[t["alternative"] == "unknown"].iloc[0]
    assert unknown["mass"] == "unknown" and unknown["mass_low"] == unknown["signature"] == ""
    alt1 = t[t["alternative"] == "Alt1"]
    assert float(alt1["mass"].iloc[0]) == pytest.approx(float(alt["mass"][0]), rel=1e-5)
    np.testing.assert_allclose(alt1["share"].astype(float).sum(), 1.0, rtol=1e-4)
    # ordered by mutations within an alternative
    assert (np.diff(alt1["mutations"].astype(float)) <= 0).all()
    assert set(t["established"]) == {False}


def test_max_alternatives_sums_the_rest(cohort, masses, alt):
    counts, ref = cohort
    one = alternatives_from_masses(masses, counts, ref, random_seed=0, max_alternatives=1)
    assert list(one["alternative"].values) == ["Alt1", "other", "unknown"]
    assert float(one["mass"].sel(alternative="other")) == pytest.approx(
        float(alt["mass"].sel(alternative="Alt2")))
    t = alternatives_table(one)
    assert t.loc[t["alternative"] == "other", "signature"].tolist() == [""]


def test_default_prior_rate_matches_the_data_scale(cohort):
    counts, _ = cohort
    Y = np.vstack([counts.values, counts.values[:3]])  # 9 samples x 6 channels
    Y[-1, 0] += 7  # a mean that is not the square one's
    alt = alternative_signatures(Y, 2, n_runs=2, n_particles=4, n_moves=1, check=None,
                                 random_seed=1)
    assert 2 * (alt.attrs["a"] / alt.attrs["b"]) ** 2 == pytest.approx(Y.mean())
    assert "best_match" not in alt  # no reference, no matches
    # signatures are over the 6 channels, exposures add up to the 9 samples' mutations
    sig = alt["signatures"].sel(alternative=alt["reached"])
    assert sig.sizes["channel"] == 6 and np.isfinite(sig).all()
    np.testing.assert_allclose(sig.sum("channel"), 1.0)
    total = alt["mutations"].sel(alternative=alt["reached"]).sum("signature")
    # a posterior draw of sum(A W) is within a few sqrt(sum Y) (under 1 %) of sum Y
    np.testing.assert_allclose(total, Y.sum(), rtol=0.05)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"rank": 0}, ValueError, "rank must be an integer"),
    ({"rank": 7}, ValueError, "rank must be an integer"),
    ({"rank": 2.0}, ValueError, "rank must be an integer"),
    ({"cutoff": 1.5}, ValueError, "cutoff"),
    ({"b": -1.0}, ValueError, "b must be positive"),
    ({"a": 0.0}, ValueError, "a must be positive"),
    ({"max_alternatives": 0}, ValueError, "max_alternatives"),
])
def test_bad_arguments(cohort, kwargs, exc, match):
    counts, ref = cohort
    kw = {"rank": 3} | kwargs
    with pytest.raises(exc, match=match):
        alternative_signatures(counts, reference=ref, **kw, **FAST)


@pytest.mark.parametrize("edit, exc, match", [
    (lambda X: X - 1000, ValueError, "non-negative integer"),
    (lambda X: X + 0.5, ValueError, "non-negative integer"),
    (lambda X: X * np.nan, ValueError, "non-negative integer"),
    (lambda X: X[0], ValueError, "2-D"),
    (lambda X: X * 0, ValueError, "no mutations"),
    (lambda X: pd.DataFrame(X), TypeError, "read_catalog"),
    (lambda X: [["a"] * 6] * 6, TypeError, "numbers"),
])
def test_bad_catalog(cohort, edit, exc, match):
    counts, ref = cohort
    with pytest.raises(exc, match=match):
        alternative_signatures(edit(counts.values), 3, **FAST)


def test_budget_too_small_says_what_fits(cohort):
    counts, ref = cohort
    # the pilot measures the cost per particle; 4 x 500 particles need far more than 1 s
    with pytest.raises(ValueError, match=r"cannot hold .* 4 runs x 500 particles.*pilot"
                                         r".*(--particles \d+|--budget\) to at least)"):
        alternative_signatures(counts, 3, ref, n_runs=4, n_particles=500, budget_s=1.0,
                               check=None, random_seed=0)
    with pytest.raises(ValueError, match="budget_s must be a positive"):
        alternative_signatures(counts, 3, ref, budget_s=-1.0, **FAST)


def _burn(seconds):
    t = time.process_time()
    while time.process_time() - t < seconds:
        pass


def test_the_budget_pilot_does_not_time_the_first_compile(cohort, monkeypatch):
    """A cold compile cache makes the first SMC dear; the pilot's cost per particle must not
    include it (it made the pilot 40 times dearer and refused budgets 20 times too large).
    The first call here burns 4 CPU s: timed, it would add 4 / 8 = 0.5 s to each of the 8
    particle-runs' cost. The bound is the same call's cost without the burn, measured after it
    (so warm), plus half of that (the cost itself is machine-dependent: 0.05 s on one machine,
    0.26-0.32 on another; its spread between calls is well under 0.25)."""
    import bnmfzoo.inference as inference

    counts, ref = cohort
    real, calls = inference.smc_mode_masses, []

    def per_particle(burn):
        calls.clear()

        def first_dear(*args, **kwargs):
            if burn and not calls:
                _burn(4.0)
            calls.append(kwargs.get("n_particles"))
            return real(*args, **kwargs)

        monkeypatch.setattr(inference, "smc_mode_masses", first_dear)
        with pytest.raises(ValueError, match="took ([0-9.]+) CPU s per particle") as err:
            alternative_signatures(counts, 3, ref, n_runs=4, n_particles=500, budget_s=1.0,
                                   check=None, random_seed=0)
        assert calls == [2, 4]  # the untimed compile run, then the timed pilot
        return float(re.search(r"took ([0-9.]+) CPU s per particle", str(err.value)).group(1))

    burned = per_particle(True)  # first: a timed compile run would also carry the compile
    plain = per_particle(False)
    assert burned < plain + 0.25, (burned, plain)


def test_reference_with_other_channels(cohort):
    counts, ref = cohort
    with pytest.raises(ValueError, match="reference has 5 channels"):
        alternative_signatures(counts, 3, ref.isel(channel=slice(0, 5)), **FAST)


def test_same_seed_same_result(cohort):
    counts, ref = cohort
    kw = {"n_runs": 2, "n_particles": 6, "n_moves": 1, "check": None, "random_seed": 5}
    one = alternative_signatures(counts, 3, ref, **kw)
    two = alternative_signatures(counts, 3, ref, **kw)
    for ds in (one, two):
        ds.attrs.pop("cpu_seconds")
        ds.attrs.pop("masses_cpu_seconds")
        for key in ("tried", "next"):  # the CPU seconds they quote vary from run to run
            ds.attrs[key] = re.sub(r"\d+ (CPU s|s at)", r"N \1", ds.attrs[key])
    xr.testing.assert_identical(one, two)
    assert one.attrs == two.attrs


def test_next_step_follows_the_reason(cohort, masses):
    counts, _ = cohort
    noisy = masses | {"statement": "Masses NOT established: the runs' log Z disagree (sd 3.1 "
                                   "nats).", "established": False}
    advice = alternatives_from_masses(noisy, counts, random_seed=0).attrs["next"]
    assert "n_particles=40 (command line: --particles 40)" in advice
    assert "n_moves=4" in advice and "run the check" not in advice
    done = alternatives_from_masses(masses | {"established": True}, counts, random_seed=0)
    assert done.attrs["next"] == "" and "20 particles" in done.attrs["tried"]


def test_masses_of_another_shape(cohort, masses):
    counts, _ = cohort
    with pytest.raises(ValueError, match="transposed"):
        alternatives_from_masses(masses, counts.values[:, :5])
    with pytest.raises(TypeError, match="masses must be"):
        alternatives_from_masses({"modes": []}, counts)


def _symmetric_trial(seed):
    """One cohort of the symmetric design: ``(both reached, passed, what happened)``.

    Passed: each mass's 95 % interval covers the exact 1/2 and the result is established (the
    reference-path check agrees).
    """
    counts, ref = symmetric_cohort(seed=seed)
    alt = alternative_signatures(counts, 3, ref, n_runs=4, n_particles=100, random_seed=seed)
    reached = alt.sel(alternative=alt["reached"])
    if reached.sizes["alternative"] != 2:
        return False, False, f"seed {seed}: {reached.sizes['alternative']} alternative(s) reached"
    cover = bool(((reached["mass_low"] <= 0.5) & (0.5 <= reached["mass_high"])).all())
    what = (f"seed {seed}: SMC {reached['mass'].values.round(3).tolist()} "
            f"[{float(reached['mass_low'][0]):.3f}, {float(reached['mass_high'][0]):.3f}], "
            f"check {reached['mass_check'].values.round(3).tolist()}; "
            f"{alt.attrs['statement'][:160]}")
    return True, cover and bool(alt.attrs["established"]), what


#: the pooled test's cohorts and how many of them may fail (seed 0, the single-seed test's, was
#: known to fail; seeds 1-7 were fixed before they were run)
SYMMETRIC_COHORTS, SYMMETRIC_MAX_FAILED = range(8), 3


@pytest.mark.slow
@pytest.mark.skipif(bool(os.environ.get("BNMFZOO_SEED_SCAN")), reason="the scan runs instead")
def test_symmetric_masses_are_half_and_established_in_most_cohorts():
    """With the default check, both halves: intervals cover the exact 1/2, and established.

    **Why pooled.** One cohort is one trial of a 95 % rule twice over: the SMC's interval (the
    runs' spread, 3 dof, Korn-Graubard) misses 1/2 about 5 % of the time, and the agreement of
    SMC and reference-path check (Welch t at 95 %) fails about 5 % of the time, so a correct
    route fails about 10 % of single cohorts. One cohort per test would be a coin with that
    bias; eight cohorts with at most three failures are not.

    **Per-cohort rate, measured** (``BNMFZOO_SEED_SCAN=1 pytest -m slow -k symmetric``, seeds
    100-119, about 30 CPU s each): **2 of 20** at 4fdc1be, both by the SMC's interval (seeds 108:
    0.741 +- 0.047 and 110: 0.643 +- 0.017; the check gave 0.501 and 0.510), none by the check;
    on the route of 2d41935 the same two seeds missed and the check disagreed in three more
    (5 of 20). Seed 0 of this test's cohorts fails at 4fdc1be by the check (0.387 +- 0.057
    against the SMC's 0.567 +- 0.038, 2.65 combined errors at a Welch factor of about 2.5).

    **False-failure rate of this test**: at a per-cohort rate of 0.10 (measured) it is
    P(Binomial(8, 0.10) >= 4) = 0.5 %; at 0.15, 2.1 %; at 0.25 (the older route's 5 of 20),
    11 %. **What it catches**: a route whose estimators disagree in most cohorts (a biased
    per-mode evidence, a stated error far too small): at a per-cohort rate of 0.8 it passes
    with probability P(Binomial(8, 0.8) <= 3) = 1.0 %.
    """
    trials = [_symmetric_trial(seed) for seed in SYMMETRIC_COHORTS]
    print("\n".join(f"{'ok    ' if ok else 'FAILED'} {what}" for _, ok, what in trials))
    # both factorizations were reached in 28 of 28 cohorts (seeds 100-119, 0-7): not pooled
    assert all(both for both, _, _ in trials), [what for both, _, what in trials if not both]
    failed = [what for _, ok, what in trials if not ok]
    assert len(failed) <= SYMMETRIC_MAX_FAILED, "\n".join(failed)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("BNMFZOO_SEED_SCAN"), reason="BNMFZOO_SEED_SCAN=1")
@pytest.mark.parametrize("seed", SEEDS)
def test_symmetric_masses_one_cohort(seed):
    """The per-cohort rate the pooled test above is sized by (run with the scan only)."""
    both, ok, what = _symmetric_trial(seed)
    assert both and ok, what


# the workflow's opt-in: extract(..., alternatives=True), alternatives.tsv, report.html, CLI
TINY = {"n_chains": 1, "n_burn": 20, "n_keep": 20, "random_seed": 0}


def test_extract_alternatives_node_and_files(tmp_path):
    from _sigdata import catalog

    from bnmfzoo.signatures import extract, write_outputs

    df, W = catalog(n_samples=12, burden=300, seed=1)
    dt = extract(df, ranks=[1, 2], alternatives=2, **TINY,
                 alternatives_options={"n_runs": 2, "n_particles": 4, "n_moves": 1,
                                       "check": None})
    alt = dt["alternatives"].to_dataset()
    assert alt.attrs["rank"] == 2 and alt.sizes["channel"] == 96
    paths = {p.name for p in write_outputs(dt, tmp_path / "out")}
    assert "alternatives.tsv" in paths
    t = pd.read_csv(tmp_path / "out" / "alternatives.tsv", sep="\t", keep_default_na=False)
    assert list(t.columns) == ALTERNATIVE_COLUMNS and t["alternative"].iloc[-1] == "unknown"
    page = (tmp_path / "out" / "report.html").read_text()
    assert "Alternative signature sets" in page and "not the compressive" in page
    assert "lowest cosine to Alt1" in page and "Tried 2 SMC runs x 4 particles" in page
    assert "Next: run the check" in page and "<td>not run</td>" in page
    # off by default: no node, no file
    plain = extract(df, ranks=[1, 2], **TINY)
    assert "alternatives" not in plain
    assert "alternatives.tsv" not in {p.name for p in write_outputs(plain, tmp_path / "p")}


@pytest.mark.parametrize("value", ["yes", 0, -2, 1.5])
def test_extract_bad_alternatives(value):
    from _sigdata import catalog

    from bnmfzoo.signatures import extract

    df, _ = catalog(n_samples=6, burden=100, seed=1)
    with pytest.raises(ValueError, match="alternatives must be"):
        extract(df, ranks=[1, 2], alternatives=value, **TINY)


@pytest.mark.slow
def test_cli_alternatives_end_to_end(tmp_path, capsys):
    from _sigdata import catalog

    from bnmfzoo.cli import main

    df, W = catalog(n_samples=20, burden=400, seed=2)
    path = tmp_path / "cat.txt"
    df.to_csv(path, sep="\t", index=False)
    ref = pd.DataFrame(W.T, columns=["SBSa", "SBSb"])
    ref.insert(0, "MutationType", df["MutationType"])
    ref_path = tmp_path / "ref.txt"
    ref.to_csv(ref_path, sep="\t", index=False)
    out = tmp_path / "out"
    rc = main(["signatures", str(path), "--ranks", "1-3", "--reference", str(ref_path),
               "--alternatives", "--particles", "50", "--budget", "600", "--chains", "2",
               "--quiet", "--out", str(out)])
    assert rc == 0
    t = pd.read_csv(out / "alternatives.tsv", sep="\t", keep_default_na=False)
    first = t[t["alternative"] == "Alt1"]
    # two well separated signatures: the heaviest alternative holds both, at cosine > 0.95
    assert sorted(first["best_match"]) == ["SBSa", "SBSb"]
    assert (first["cosine"].astype(float) > 0.95).all()
    assert t["alternative"].iloc[-1] == "unknown" and t["mass"].iloc[-1] == "unknown"
