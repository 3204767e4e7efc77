"""The Bernoulli models' one recognition path changes no numbers: fingerprints from before it.

Issue #18 moved ``beta_dir``, ``dir_beta`` and ``dir_dir`` from a hand-built spec attached to the
model to the recognition of the model's graph (:func:`bnmfzoo.models.recognize`). The hashes
below were generated on main at commit e6405e3 (before the change; same venv, one BLAS thread)
by the very code of this module: SHA-256 (first 16 hex digits) of the float64 bytes of the
draws of ``pm.sample`` with the collapsed steps (two seeds), of ``fit_collapsed_gibbs`` (draws,
log joint, Rao-Blackwellized predictions), of ``fit_cvb0`` (draws, NLL traces, predictions,
iterations), of ``BayesianNMF`` (components and reconstruction error) and of ``bnmfzoo fit``,
for the three families, the parametric (``rank=3``) and truncated (``truncation=6``) priors, on
dense data, dense data with NaN (60 % observed), sparse long-format data (6 % observed) and the
NaN data given as sparse input (``sparse_hi``).

One deliberate difference: on main, sparse input kept its predictions and NLL in long format
whatever its density; now every model follows the recognized model's density rule
(:data:`bnmfzoo.models._observed.DENSE_MIN_FRACTION`, dense arrays from 1/8 observed on), so for
``sparse_hi`` (60 % observed) those fields are the dense-with-NaN input's main values (the same
model, now the same outputs); its draws are its own main values. Everything else is main's.
A different BLAS or NumPy build may change the predictions' last bits (they are BLAS
products): regenerate the table on main then.

Reproducibility only, not correctness (issue #36). A changed hash says the numbers changed, not
whether the change is a bug or a fix: an audit that planted a stale count in the Beta-Dir sweep
was seen *only* by these hashes, and regenerating them would have shipped it. Never regenerate
the table to make it pass; decide with the statistical tests of the collapsed samplers first,
and regenerate only when they pass on the change:
``tests/binary/test_bernoulli_gibbs.py::test_betadir_sweep_keeps_the_enumerated_posterior`` and
``::test_dirdir_sweep_keeps_the_enumerated_posterior`` (one sweep from exact draws of an
enumerated posterior, 20,000 chains: the test that catches the stale count, p ~ 1e-21),
``::test_betadir_sweep_matches_enumerated_posterior`` / ``::test_dirdir_sweep_matches_...``,
``::test_sbc_collapsed_kernel``, ``::test_betadir_gibbs_agrees_with_nuts``,
``tests/binary/test_bernoulli_cvb0.py::test_cvb0_update_is_fixed_point`` (CVB0),
``tests/binary/test_replica_collapsed.py::test_sbc_replica_exchange_collapsed`` (tempered sweeps);
then ``python -m benchmarks.mutation.run --catalog binary``, and record in the commit why the
numbers changed.
"""

import contextlib
import hashlib
import io
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import xarray as xr

import bnmfzoo as bz
from bnmfzoo.inference import (
    CollapsedGibbsBetaDir,
    CollapsedGibbsDirDir,
    fit_collapsed_gibbs,
    fit_cvb0,
    sample,
)
from bnmfzoo.models import beta_dir, dir_beta, dir_dir

MODELS = {"beta_dir": beta_dir, "dir_beta": dir_beta, "dir_dir": dir_dir}
FORMS = ("dense", "nan", "sparse", "sparse_hi")


def h(arr):
    a = np.ascontiguousarray(np.asarray(arr, dtype=np.float64))
    return hashlib.sha256(a.tobytes()).hexdigest()[:16]


def _data():
    rng = np.random.default_rng(7)
    D, N = 18, 13
    X = (rng.random((D, 3)) @ rng.random((3, N)) / 3 > rng.random((D, N))).astype(float)
    dense = X.copy()
    nan = X.copy()
    nan[rng.random(X.shape) < 0.4] = np.nan
    nan[np.arange(D), np.arange(D) % N] = 1.0
    # sparse: 60 x 45, about 6 % observed (< 1/8), every row and column observed
    D2, N2 = 60, 45
    M = rng.random((D2, N2)) < 0.06
    M[np.arange(D2), np.arange(D2) % N2] = True
    rows, cols = np.nonzero(M)
    vals = (rng.random(rows.size) < 0.35).astype(float)
    S = sp.csr_array((vals, (rows, cols)), shape=(D2, N2))
    hi = sp.csr_array((nan[~np.isnan(nan)], np.nonzero(~np.isnan(nan))), shape=nan.shape)
    return {"dense": dense, "nan": nan, "sparse": bz.long_format(S),
            "sparse_hi": bz.long_format(hi)}


@pytest.fixture(scope="module")
def data():
    return _data()


def _check(got):
    wrong = {k: (v, FINGERPRINTS[k]) for k, v in got.items() if v != FINGERPRINTS[k]}
    assert not wrong, wrong


@pytest.mark.parametrize("prior", ["rank", "truncation"])
@pytest.mark.parametrize("family", list(MODELS))
@pytest.mark.parametrize("form", FORMS)
def test_samplers_unchanged(data, form, family, prior):
    """pm.sample with the collapsed steps, fit_collapsed_gibbs and fit_cvb0: main's bits."""
    model = MODELS[family](data[form], **({"rank": 3} if prior == "rank" else {"truncation": 6}))
    assert not hasattr(model, "bnmfzoo_spec")  # read through recognition only
    tag = f"{form}/{family}/{prior}"
    step = CollapsedGibbsDirDir if family == "dir_dir" else CollapsedGibbsBetaDir
    got = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in (2, 9):
            t = sample(model, step=step, draws=6, tune=3, chains=1, random_seed=seed,
                       progressbar=False, compute_convergence_checks=False)
            got[f"{tag}/sample{seed}"] = " ".join(h(t.posterior[v]) for v in ("A", "W"))
        r = fit_collapsed_gibbs(model, draws=8, tune=4, thin=2, chains=2, random_seed=4,
                                progressbar=False)
    got[f"{tag}/fcg"] = " ".join([h(r.posterior["A"]), h(r.posterior["W"]),
                                  h(r.sample_stats["log_joint"]),
                                  h(r["rao_blackwell"]["X_mean"]),
                                  str(r["rao_blackwell"]["X_mean"].dims)])
    if family != "dir_dir":
        r = fit_cvb0(model, max_iter=30, n_draws=4, random_seed=5, progressbar=False)
        got[f"{tag}/cvb0"] = " ".join([h(r.posterior["A"]), h(r.posterior["W"]),
                                       h(r["variational"]["nll"]), h(r.sample_stats["nll"]),
                                       h(r["variational"]["X_mean"]), str(r.attrs["n_iter"])])
    _check(got)


@pytest.mark.parametrize("form", FORMS)
def test_estimator_unchanged(data, form):
    """BayesianNMF on the binary models: main's components and reconstruction error.

    Both rounded (components to 10 decimals, the error to 12 digits) before they are hashed:
    the point estimate aligns and averages the draws with BLAS products, whose last bits
    depend on the machine's BLAS kernel. On an AMD EPYC (30 Nov 2026) the collapsed-Gibbs
    components' unrounded hashes differed from those of the machine the table was made on while
    every draw's hash and the reconstruction errors' 16 digits agreed; the rounded entries
    below were regenerated then, from the same draws.
    """
    got = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fam, method in (("beta_dir", "collapsed_gibbs"), ("beta_dir", "cvb0"),
                            ("dir_dir", None), ("dir_beta", "collapsed_gibbs")):
            est = bz.BayesianNMF(n_components=3, model=fam, method=method, draws=8, tune=4,
                                 chains=1, random_state=3).fit(data[form])
            got[f"{form}/est/{fam}/{method}"] = (h(np.round(est.components_, 10)) + " "
                                                 + f"{float(est.reconstruction_err_):.12g}")
    _check(got)


def test_cli_unchanged(data, tmp_path):
    """``bnmfzoo fit`` on a dense CSV with NaN and on a sparse .npz: main's draws.

    Collapsed Gibbs only: CVB0's CLI draws changed on main after e6405e3 for another reason
    (``--draws`` and the CLI's default counts now reach ``n_draws``, commit 42bcd4e), and
    ``fit_cvb0`` itself is covered above.
    """
    from bnmfzoo.cli import main

    csv = data["nan"].copy()
    csv[:, 0] = data["dense"][:, 0]  # (a NaN in the first column trips the index detection)
    np.savetxt(tmp_path / "x.csv", csv, delimiter=",")
    e = data["sparse"]
    sp.save_npz(tmp_path / "x.npz", sp.csr_array((e.values, (e.rows, e.cols)), shape=e.shape))
    got = {}
    for name in ("x.csv", "x.npz"):
        for method in ("collapsed_gibbs",):
            out = tmp_path / f"{name[2:]}_{method}.nc"
            with contextlib.redirect_stdout(io.StringIO()):
                rc = main(["fit", str(tmp_path / name), "--model", "beta_dir", "--rank", "3",
                           "--seed", "1", "--quiet", "--draws", "6", "--tune", "2",
                           "--chains", "1", "--method", method, "--out", str(out)])
            with xr.open_datatree(out) as t:
                got[f"cli/{name}/{method}"] = (f"rc={rc} " + h(t.posterior["A"]) + " "
                                               + h(t.posterior["W"]))
    _check(got)


# generated on main (e6405e3); sparse_hi fcg/cvb0 prediction and NLL fields: see the docstring
FINGERPRINTS = {
    'dense/beta_dir/rank/sample2': 'f8cea0942d6923c7 4d2d0f2b05ff8d35',
    'dense/beta_dir/rank/sample9': '962c2e520fcbbf3e c813ab29b7d77332',
    'dense/beta_dir/rank/fcg': (
        'dd0e98d749a47090 78455b18a0f40a2d 3012a7fddb92ecdc '
        "e8aa2897f535fc81 ('row', 'col')"),
    'dense/beta_dir/rank/cvb0': (
        '6a2dae7070e4377c a774eec43106bcc9 193ef756da97ebf7 '
        '6d52d8b741fb9cab 9273050407b541eb 30'),
    'dense/beta_dir/truncation/sample2': '903450b254586e28 c8ef5005134daaff',
    'dense/beta_dir/truncation/sample9': '5dd18b81bac67a2d 5eefb6f35afbb34b',
    'dense/beta_dir/truncation/fcg': (
        '459917fa5a5a9364 6e114481a3c79f78 8630950658d386de '
        "2ff863b9f43a8162 ('row', 'col')"),
    'dense/beta_dir/truncation/cvb0': (
        '6d0f2846b816e1ad 85471cf910c9b254 664bbc057808aa8f '
        'a56cf33c210e61ee 9d16e4f0ac024815 30'),
    'dense/dir_beta/rank/sample2': '28d6db1f52e74235 61cabe6bacd359c6',
    'dense/dir_beta/rank/sample9': '6c4fa43c17013217 bb8695da0d5f8913',
    'dense/dir_beta/rank/fcg': (
        '054e7c7d06921c33 d65294dc9d7c8cb4 4856b3ec620b48e6 '
        "1c1a43c2a28a6714 ('row', 'col')"),
    'dense/dir_beta/rank/cvb0': (
        '74b3b4297e17fcf2 44b550ec3bcaa203 79f8d25a6ba753d7 '
        'f7656d3d010f1542 494ce71f4946f02a 30'),
    'dense/dir_beta/truncation/sample2': 'cc26137aa0bd8f02 a3991131254aefcb',
    'dense/dir_beta/truncation/sample9': 'ceb675d95a370b3d 6ad7f37d028d81d3',
    'dense/dir_beta/truncation/fcg': (
        'e5a619c26f8ea2a5 b4886d1c0a34d5bc 70c9dadc868a9c09 '
        "5795beb27f36ff93 ('row', 'col')"),
    'dense/dir_beta/truncation/cvb0': (
        '3bed9ce55b356b85 20fc50c172929b58 00cc57ab52ebb89f '
        '695dfc01cec601b2 b404080765c865e4 30'),
    'dense/dir_dir/rank/sample2': '0005254f7c64df96 6717f8d5a25850d9',
    'dense/dir_dir/rank/sample9': 'cb71c743092b129c 457a9e20005461ba',
    'dense/dir_dir/rank/fcg': (
        '22130aaf03cbe95d 89bca678980f9392 36b37a9ad94b4dfe '
        "b6acf46e713c7454 ('row', 'col')"),
    'dense/dir_dir/truncation/sample2': '6a2000b5d5372765 6d37453495619200',
    'dense/dir_dir/truncation/sample9': 'bc6af1a5c2fdf471 46212968a83b5ebf',
    'dense/dir_dir/truncation/fcg': (
        '2418ed3d8003452b e463e2aab6268282 38cf6e15b59b38e7 '
        "f575838cdc7b36ed ('row', 'col')"),
    'dense/est/beta_dir/collapsed_gibbs': '9f84d0e5e2bb058e 6.15091658259',
    'dense/est/beta_dir/cvb0': '73975dae9342153b 6.16690823924',
    'dense/est/dir_dir/None': '3eec33e0058f5d80 6.32950579976',
    'dense/est/dir_beta/collapsed_gibbs': '493ee92057536e01 6.21456246579',
    'nan/beta_dir/rank/sample2': 'ecc2588ae984b416 14c66ca6bbea909e',
    'nan/beta_dir/rank/sample9': '2015e32eeaa8968b 1b1e233525252b50',
    'nan/beta_dir/rank/fcg': (
        '32a735a78c24fc62 82faddb34f476dec 92f4227a228d8a75 '
        "1c4b4f78e02d4dd8 ('row', 'col')"),
    'nan/beta_dir/rank/cvb0': (
        'c00d658081dac1f0 70bbdcdb80cc710c babb5114ac43e33a '
        '3f97b9ed30264ddf 822c456833d2fdad 30'),
    'nan/beta_dir/truncation/sample2': '6fa1fa5e7d4dedfb bbe16d76c67b41f9',
    'nan/beta_dir/truncation/sample9': '5cb4174dd7d76938 0e5d0599bdd00789',
    'nan/beta_dir/truncation/fcg': (
        'c0d58922208dad89 7947f791af63cd6c 9c951b12ccaad5a2 '
        "d14b112c3e9f1fe1 ('row', 'col')"),
    'nan/beta_dir/truncation/cvb0': (
        '9392691d742eabe9 51102caf33d30e21 739d62bd7c8ddccb '
        '302fc08c961b7d0b 081eacdced4fc09b 30'),
    'nan/dir_beta/rank/sample2': 'd1a4c4bdf44dae0e 3ed15da08667619e',
    'nan/dir_beta/rank/sample9': '84be75e80124b17f b9c75b58b0f2e20c',
    'nan/dir_beta/rank/fcg': (
        'd4850ee1f5f6c6f3 aabd089af63384ea 0da0bf08d45e5d6c '
        "c943041a64a18558 ('row', 'col')"),
    'nan/dir_beta/rank/cvb0': (
        'ef5fffed88101359 1b769a4957e95376 95950bf22ee981f2 '
        'dffb0d2bbc3ab354 d3099322caddf7d9 30'),
    'nan/dir_beta/truncation/sample2': 'cca7140f6305af07 dc434a76c5410eb9',
    'nan/dir_beta/truncation/sample9': '988d3d6af7fb6fc3 499f8ea8fb550b72',
    'nan/dir_beta/truncation/fcg': (
        '57e08b2156876f9d fcc7a38159289562 96a281784909d2d0 '
        "96cace41aca59d25 ('row', 'col')"),
    'nan/dir_beta/truncation/cvb0': (
        'fbc3f3ea1a2ef15f 7dca20fb87c8dfb6 7969bd97e0256b7b '
        '6076aa0e8ee033a6 0592c486223c9a6c 30'),
    'nan/dir_dir/rank/sample2': '2626b47380dd61bd 01087bb1b61ee2a7',
    'nan/dir_dir/rank/sample9': 'a2b07d3ac9e13320 a9c21a6fedf90c26',
    'nan/dir_dir/rank/fcg': (
        '08653aa06f022f26 43fd1564903a09b6 c713d821ac37b6e4 '
        "0194901de26f47ed ('row', 'col')"),
    'nan/dir_dir/truncation/sample2': '3ecde25f4e063a7f 72261545f35cfbfe',
    'nan/dir_dir/truncation/sample9': '1da89ebcd55e710a 41a4a3b085a45a8f',
    'nan/dir_dir/truncation/fcg': (
        'f3ae39eb0c7b12d7 333a18f8ee380ba8 bdfbe50b18f85c00 '
        "161c450c5d59e1b2 ('row', 'col')"),
    'nan/est/beta_dir/collapsed_gibbs': 'ab21cf7ac1f12b84 5.4917654472',
    'nan/est/beta_dir/cvb0': '66bef323daff6ed8 5.67694669812',
    'nan/est/dir_dir/None': '4088190cb4bdafbc 5.65938886531',
    'nan/est/dir_beta/collapsed_gibbs': 'd3957ae8dd6614f3 5.31550910143',
    'sparse/beta_dir/rank/sample2': '55aee76492e8526e be60456aadaff1c4',
    'sparse/beta_dir/rank/sample9': 'dd655617bdf51208 f81ee53a51f70546',
    'sparse/beta_dir/rank/fcg': (
        '6ce3eadc51fcd85c eeaaca3fd9be7e5d '
        "88f4fde82353bf61 36a08653fa2f17d4 ('X_obs',)"),
    'sparse/beta_dir/rank/cvb0': (
        'ab997574a740145f e214dc5cc276fb77 87b48c26ba9bfd00 '
        'c190591b2e5938ff 51a186a1667fe611 30'),
    'sparse/beta_dir/truncation/sample2': '92024e973590a4ed 5c345908ab825425',
    'sparse/beta_dir/truncation/sample9': 'f5e1dd1b16a617dd 821a66d3bec5fd2a',
    'sparse/beta_dir/truncation/fcg': (
        'b48a906e33c1fec5 ed7438f9f8038e9f '
        "ac418e49941a351a 2caa686bdc2e7314 ('X_obs',)"),
    'sparse/beta_dir/truncation/cvb0': (
        'a7ed23da7438b416 cede2ff0b5588edc 3ab29a00a915457f '
        'ecff2cecee4d5f2b ac67132a489a7a81 30'),
    'sparse/dir_beta/rank/sample2': 'a13b1ae1c899c43f e383dc2188e63040',
    'sparse/dir_beta/rank/sample9': '6594fb6e76e54de4 4268db5d96befc89',
    'sparse/dir_beta/rank/fcg': (
        '34119d60b56c45fb d6bf50af9dd7f503 '
        "d76f63b0b36b3e47 6a69b0bb656f58ff ('X_obs',)"),
    'sparse/dir_beta/rank/cvb0': (
        'ef9c92321325ec44 cf3ca7863de67ca5 f99320ddedcf5832 '
        '13fee2cd0151fae4 a13ea65308067cca 30'),
    'sparse/dir_beta/truncation/sample2': 'a3bfeba9e3f6bc78 7bc5e0d1b05f766c',
    'sparse/dir_beta/truncation/sample9': '495bcaab235967cd 7edd436c8a4b78d5',
    'sparse/dir_beta/truncation/fcg': (
        '9b06514b7b35803c d163144b1d985632 '
        "1caef6e32b30a5ec a7cf71deeeea01cc ('X_obs',)"),
    'sparse/dir_beta/truncation/cvb0': (
        '18bb950205246db6 59efd4fe363e866d a537f609f238366a '
        '0af1d48f7958de6c 9fdc45560204ca3b 30'),
    'sparse/dir_dir/rank/sample2': '3b669fe1518bb18c 82d8afe090454dfc',
    'sparse/dir_dir/rank/sample9': 'de8dbb030a55e761 19b78ed92a6f130f',
    'sparse/dir_dir/rank/fcg': (
        '3a119346370cfbae f90230c15a8a7265 '
        "a2513e2a5118e211 dc828cfad4253d3a ('X_obs',)"),
    'sparse/dir_dir/truncation/sample2': 'a7dc4d1e68df5c32 5a81845822b5354e',
    'sparse/dir_dir/truncation/sample9': '051040ba8df93f3e da9041df73124d24',
    'sparse/dir_dir/truncation/fcg': (
        '2bbba486c2219550 1206467095f985bb '
        "8cae1a6b1e496a5e 81fac3e1184b2599 ('X_obs',)"),
    'sparse/est/beta_dir/collapsed_gibbs': '3c112ac1d78a90d0 6.18248571964',
    'sparse/est/beta_dir/cvb0': '72e7182ef81403a0 6.53733320659',
    'sparse/est/dir_dir/None': '6811ee2b2507ec82 6.34722894402',
    'sparse/est/dir_beta/collapsed_gibbs': 'd82546f1142cd472 6.27601777372',
    'sparse_hi/beta_dir/rank/sample2': 'ecc2588ae984b416 14c66ca6bbea909e',
    'sparse_hi/beta_dir/rank/sample9': '2015e32eeaa8968b 1b1e233525252b50',
    'sparse_hi/beta_dir/rank/fcg': (
        '32a735a78c24fc62 82faddb34f476dec 92f4227a228d8a75 '
        "1c4b4f78e02d4dd8 ('row', 'col')"),
    'sparse_hi/beta_dir/rank/cvb0': (
        'c00d658081dac1f0 70bbdcdb80cc710c babb5114ac43e33a '
        '3f97b9ed30264ddf 822c456833d2fdad 30'),
    'sparse_hi/beta_dir/truncation/sample2': '6fa1fa5e7d4dedfb bbe16d76c67b41f9',
    'sparse_hi/beta_dir/truncation/sample9': '5cb4174dd7d76938 0e5d0599bdd00789',
    'sparse_hi/beta_dir/truncation/fcg': (
        'c0d58922208dad89 7947f791af63cd6c 9c951b12ccaad5a2 '
        "d14b112c3e9f1fe1 ('row', 'col')"),
    'sparse_hi/beta_dir/truncation/cvb0': (
        '9392691d742eabe9 51102caf33d30e21 739d62bd7c8ddccb '
        '302fc08c961b7d0b 081eacdced4fc09b 30'),
    'sparse_hi/dir_beta/rank/sample2': 'd1a4c4bdf44dae0e 3ed15da08667619e',
    'sparse_hi/dir_beta/rank/sample9': '84be75e80124b17f b9c75b58b0f2e20c',
    'sparse_hi/dir_beta/rank/fcg': (
        'd4850ee1f5f6c6f3 aabd089af63384ea 0da0bf08d45e5d6c '
        "c943041a64a18558 ('row', 'col')"),
    'sparse_hi/dir_beta/rank/cvb0': (
        'ef5fffed88101359 1b769a4957e95376 95950bf22ee981f2 '
        'dffb0d2bbc3ab354 d3099322caddf7d9 30'),
    'sparse_hi/dir_beta/truncation/sample2': 'cca7140f6305af07 dc434a76c5410eb9',
    'sparse_hi/dir_beta/truncation/sample9': '988d3d6af7fb6fc3 499f8ea8fb550b72',
    'sparse_hi/dir_beta/truncation/fcg': (
        '57e08b2156876f9d fcc7a38159289562 96a281784909d2d0 '
        "96cace41aca59d25 ('row', 'col')"),
    'sparse_hi/dir_beta/truncation/cvb0': (
        'fbc3f3ea1a2ef15f 7dca20fb87c8dfb6 7969bd97e0256b7b '
        '6076aa0e8ee033a6 0592c486223c9a6c 30'),
    'sparse_hi/dir_dir/rank/sample2': '2626b47380dd61bd 01087bb1b61ee2a7',
    'sparse_hi/dir_dir/rank/sample9': 'a2b07d3ac9e13320 a9c21a6fedf90c26',
    'sparse_hi/dir_dir/rank/fcg': (
        '08653aa06f022f26 43fd1564903a09b6 c713d821ac37b6e4 '
        "0194901de26f47ed ('row', 'col')"),
    'sparse_hi/dir_dir/truncation/sample2': '3ecde25f4e063a7f 72261545f35cfbfe',
    'sparse_hi/dir_dir/truncation/sample9': '1da89ebcd55e710a 41a4a3b085a45a8f',
    'sparse_hi/dir_dir/truncation/fcg': (
        'f3ae39eb0c7b12d7 333a18f8ee380ba8 bdfbe50b18f85c00 '
        "161c450c5d59e1b2 ('row', 'col')"),
    'sparse_hi/est/beta_dir/collapsed_gibbs': 'ab21cf7ac1f12b84 5.4917654472',
    'sparse_hi/est/beta_dir/cvb0': '66bef323daff6ed8 5.67694669812',
    'sparse_hi/est/dir_dir/None': '4088190cb4bdafbc 5.65938886531',
    'sparse_hi/est/dir_beta/collapsed_gibbs': 'd3957ae8dd6614f3 5.31550910143',
    'cli/x.csv/collapsed_gibbs': 'rc=0 8da29e863fa77934 5faec2ed477f3044',
    'cli/x.npz/collapsed_gibbs': 'rc=0 03e620a5995a748d 439420d18e4301f5',
}
