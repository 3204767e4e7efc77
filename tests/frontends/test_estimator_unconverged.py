"""``BayesianNMF.fit`` warns when its MCMC chains have not converged on the factors it reports.

The check and the message are :func:`bnmfzoo.diagnostics.align`'s (R-hat > 1.01 or bulk ESS
< 400 on an entry of the heaviest mode's aligned ``A`` / ``W``): the slowest entries with
their R-hat and bulk ESS, the budget asked and what to run next.

The unconverged fits use 20 draws per chain: a bulk ESS of 400 is then impossible (at most
about 40 draws' worth over 2 chains, in practice far fewer), so the warning cannot fail to
appear. The converged fit is a well-identified rank-1 problem (8 x 5, every entry of
``A`` and ``W`` pinned by the data) with 4000 draws per chain: run once over seeds 0-19 it
warned 0 times in 20 (the test uses seed 0).
"""

import re
import warnings

import numpy as np

from bnmfzoo import BayesianNMF

SLOW = re.compile(r"([AW])\[(\d+), (\d+)\]: R-hat (\d+\.\d+), bulk ESS (\d+)")


def _fit(X, **kw):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        BayesianNMF(random_state=0, **kw).fit(X)
    return [str(r.message) for r in rec if "after alignment" in str(r.message)]


def _rank3(seed=0):
    rng = np.random.default_rng(seed)
    return rng.gamma(2.0, 1.0, (30, 3)) @ rng.gamma(2.0, 1.0, (3, 20))


def test_tiny_budget_warns_with_the_slowest_entries_and_the_next_run():
    X = _rank3() + 0.3 * np.random.default_rng(1).standard_normal((30, 20))
    (msg,) = _fit(X, n_components=3, draws=20, tune=20, chains=2)
    slow = SLOW.findall(msg)
    assert 1 <= len(slow) <= 5
    assert all(int(e) < 400 for *_, e in slow)
    assert "budget asked: 20 draws x 2 chains" in msg
    more = int(re.search(r"run about (\d+) draws per chain \(2 chains; now 20,", msg).group(1))
    assert more > 20
    assert "ReplicaExchangeGibbs" in msg and "bnmfzoo.diagnostics.summary" in msg


def test_count_path_warns_too():
    X = np.random.default_rng(2).poisson(_rank3())
    (msg,) = _fit(X, n_components=3, beta_loss="kullback-leibler", draws=20, tune=20)
    assert SLOW.search(msg) and "budget asked: 20 draws x 2 chains" in msg


def test_one_chain_is_judged_by_ess_alone():
    X = _rank3() + 0.3 * np.random.default_rng(1).standard_normal((30, 20))
    (msg,) = _fit(X, n_components=3, draws=20, tune=20, chains=1)
    assert msg.startswith("after alignment") and "bulk ESS < 400" in msg
    assert "R-hat" not in msg and "budget asked: 20 draws x 1 chain." in msg
    ess = [int(e) for e in re.findall(r"[AW]\[\d+, \d+\]: bulk ESS (\d+)", msg)]
    assert 1 <= len(ess) <= 5 and ess == sorted(ess) and max(ess) < 400


def test_not_mcmc_no_warning():
    assert _fit(_rank3(), n_components=3, method="vb", draws=20) == []


def test_converged_rank1_fit_does_not_warn():
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 2, (8, 1)) @ rng.uniform(1, 2, (1, 5)) + 0.3 * rng.standard_normal((8, 5))
    assert _fit(X, n_components=1, draws=4000, tune=200, chains=2) == []


def test_cli_fit_prints_the_warning_as_one_line(tmp_path, capsys):
    from bnmfzoo import cli

    X = _rank3() + 0.3 * np.random.default_rng(1).standard_normal((30, 20))
    np.savetxt(tmp_path / "x.csv", X, delimiter=",")
    out = tmp_path / "fit.nc"
    code = cli.main(["fit", str(tmp_path / "x.csv"), "--rank", "3", "--draws", "20", "--tune",
                     "20", "--seed", "0", "--out", str(out), "--quiet"])
    assert code in (0, None) and out.exists()
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "after alignment" in ln]
    assert len(lines) == 1 and lines[0].startswith("warning: after alignment")
    assert SLOW.search(lines[0]) and "budget asked: 20 draws x 2 chains" in lines[0]
