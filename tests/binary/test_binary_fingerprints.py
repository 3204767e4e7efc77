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

Regenerated once, 1 Dec 2026, with every value rounded to 8 decimals before hashing (``h``): a
fresh environment on a new machine (AMD EPYC without AVX-512; NumPy 2.5.5, PyTensor 3.3.8)
changed every unrounded sampler hash while no sampler code had changed since the table passed
and the estimator entries (components rounded to 10 decimals) still matched, so the draws
agreed to at least 10 decimals; the statistical tests below passed in the same run. The
rounded table is the same under NumPy 2.4.6 with PyTensor 3.3.7, under OpenBLAS's Sandybridge
kernel and with NumPy's AVX2 loops switched off.

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
    """The first 16 hex digits of the SHA-256 of the values rounded to 8 decimals.

    Rounded because the last bits of a draw depend on the environment (1 Dec 2026: a fresh
    environment on a new machine changed the unrounded hashes of every sampler here while the
    estimator's rounded components still matched; the code had not changed). A planted bug
    moves the draws by far more than 1e-8.
    """
    a = np.round(np.asarray(arr, dtype=np.float64), 8) + 0.0  # + 0.0: no negative zeros
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


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


# regenerated 1 Dec 2026 (values rounded to 8 decimals, see h) from the draws of main at
# b9a6471, whose samplers had not changed since the unrounded table (generated at e6405e3)
FINGERPRINTS = {
    'dense/beta_dir/rank/sample2': '9814d9056e52c029 29c47c98a592a13d',
    'dense/beta_dir/rank/sample9': '66e102944891674d 10e89f212640c678',
    'dense/beta_dir/rank/fcg': (
        "54c14b0944d3bbbd 6527b1637556eff3 af3921c90cfacdaf 4ce5e615f9340bec ('row', "
        "'col')"),
    'dense/beta_dir/rank/cvb0': (
        '29cf1ca52c445168 fa0423ce198b3af5 a73ded85db8acd8d 4a89a5983f5c4524 '
        '9589854f76d11184 30'),
    'dense/beta_dir/truncation/sample2': '5747cd7c7da27801 c4d8c15fbd20b134',
    'dense/beta_dir/truncation/sample9': 'ffb7ebe812fb53f5 12d36c7ed2eb6cfb',
    'dense/beta_dir/truncation/fcg': (
        "b3237ca8895512c3 91865eca43d643ce 0499246471539201 4f044d568d5164ab ('row', "
        "'col')"),
    'dense/beta_dir/truncation/cvb0': (
        '87134335a236073f c4c59b27388ecd59 c6e7c3a1c3653757 f39c7803d276d6a5 '
        '260eb780cf95921b 30'),
    'dense/dir_beta/rank/sample2': '024e0c2be63204e7 01664c28b51dc3f5',
    'dense/dir_beta/rank/sample9': '8a78b8ac042e263e 95abd544f5380cb3',
    'dense/dir_beta/rank/fcg': (
        "8f643247e09eb017 e403e3390aff13b2 65ff899435954e05 3ab18efbcc69bee4 ('row', "
        "'col')"),
    'dense/dir_beta/rank/cvb0': (
        'ccce3341166a8bd5 f080c6ea501ce35e a1dda0136e570450 5ebcae355170cb45 '
        'd533c13c774b779c 30'),
    'dense/dir_beta/truncation/sample2': '06ce98127b77e31c f688ae01dec576b8',
    'dense/dir_beta/truncation/sample9': 'd68f1de6a423f614 d42ef29bbd8bc256',
    'dense/dir_beta/truncation/fcg': (
        "167ea6231f51f884 e667e3def463bbce 2833d48da1b6a270 b57ff6f596c9ec98 ('row', "
        "'col')"),
    'dense/dir_beta/truncation/cvb0': (
        '9b492de882280586 70cae7efd3ea27c1 ab027b26cefa428d 7f83970881926e70 '
        'bf0ae2979d674caf 30'),
    'dense/dir_dir/rank/sample2': 'a8ed6e9790a621fd 5e6c88d2da8b72dd',
    'dense/dir_dir/rank/sample9': '2e19107e3245321c 7b60e934a9074c26',
    'dense/dir_dir/rank/fcg': (
        "dfc41f55a6f6ce2b 48cd3cfb07d7621d 03ef4a64859c3bac 60cc8a3752ca9895 ('row', "
        "'col')"),
    'dense/dir_dir/truncation/sample2': '6ddc4ebe297c6c0d d06b03d6b11704fd',
    'dense/dir_dir/truncation/sample9': '3d52948285f08063 5e620416a6d3f888',
    'dense/dir_dir/truncation/fcg': (
        "ee9f4fca692422f9 d9a89ed30f43095e d8d845ce994b8aa7 1ec2323dfead9182 ('row', "
        "'col')"),
    'dense/est/beta_dir/collapsed_gibbs': '83f5cb902d14e27c 6.15091658259',
    'dense/est/beta_dir/cvb0': '8798ba53dc470137 6.16690823924',
    'dense/est/dir_dir/None': '3c4e5973a1546910 6.32950579976',
    'dense/est/dir_beta/collapsed_gibbs': 'eb33f6c2eba49266 6.21456246579',
    'nan/beta_dir/rank/sample2': '1f9bb65300afea13 4bb45b1e758fcf90',
    'nan/beta_dir/rank/sample9': '05f692e3c30ba805 269dd7af5457ee84',
    'nan/beta_dir/rank/fcg': (
        "f3d6b2f5bac29b35 7fd36c000f0b1985 fd7ead75b3761c58 fa7127de096376d2 ('row', "
        "'col')"),
    'nan/beta_dir/rank/cvb0': (
        '6528267bf50dea3b 7462a2c9f0be9ed3 c774a989670c1666 bdcb8a904650db39 '
        'e5ceb04bb571fd3c 30'),
    'nan/beta_dir/truncation/sample2': 'cc18d48c29ace313 ab71418110a12762',
    'nan/beta_dir/truncation/sample9': 'ce373e7b116fc00d 07c99370dfe627a7',
    'nan/beta_dir/truncation/fcg': (
        "597c4688f7d3430b 5e9282f73cd12b5f cae492e5fc7d5001 9fcc48823fe70756 ('row', "
        "'col')"),
    'nan/beta_dir/truncation/cvb0': (
        '000ef71099ed44d8 a025936726ae4e10 10783bbdc8f2902e e3057f6a07de2b3b '
        '57879172e60eea6e 30'),
    'nan/dir_beta/rank/sample2': 'ba24b95fa99c8421 124df0faaaada9b6',
    'nan/dir_beta/rank/sample9': '466ed5104709dfdf 09a5e1ff48a2d161',
    'nan/dir_beta/rank/fcg': (
        "930664514ef286ef a6d22b3c319b7c80 edb6ecdd10cb2b0f b44ca957953c9fff ('row', "
        "'col')"),
    'nan/dir_beta/rank/cvb0': (
        '17a2612779b45a49 1129c5ec102f5afa f90675f2b4e55542 4f8e51f7f569af8d '
        '57526577488f6f98 30'),
    'nan/dir_beta/truncation/sample2': '1a8f00ac303efb73 afc704fd9664c4d8',
    'nan/dir_beta/truncation/sample9': '11b0a10d8ed5fd0b 1e5996702ae78926',
    'nan/dir_beta/truncation/fcg': (
        "16fab30926fca4dd da9ff234fcf404a1 bbc44691e74fe896 e64f3c222ffc60a3 ('row', "
        "'col')"),
    'nan/dir_beta/truncation/cvb0': (
        'a2c1de5430ba5ae6 81a04f5dc46c894f ad5ccdb13a92e455 c6bb0bc9ad7785f3 '
        'b34fa6b80034b673 30'),
    'nan/dir_dir/rank/sample2': 'b1527ea9bd5fdb4d 369783d7b6282efe',
    'nan/dir_dir/rank/sample9': '63bdce465a0b4c84 3dbb9333fef7f44c',
    'nan/dir_dir/rank/fcg': (
        "6807be1871aa37f3 d431b003c8000a1d f4ef719dbd8574f7 30cdab5599067b49 ('row', "
        "'col')"),
    'nan/dir_dir/truncation/sample2': '7f3129edb78c02cd 9da33d0137da6760',
    'nan/dir_dir/truncation/sample9': '0123d44d4f48fd5f 4a2eb506d507f3f0',
    'nan/dir_dir/truncation/fcg': (
        "a80db8998cbfddbc 01264d110254b818 cd2300ec3ee6b8bf de9672797b7cee53 ('row', "
        "'col')"),
    'nan/est/beta_dir/collapsed_gibbs': 'c406e79345e8d95d 5.4917654472',
    'nan/est/beta_dir/cvb0': '837aecf0ec4bec5d 5.67694669812',
    'nan/est/dir_dir/None': '566552d125d0d6e8 5.65938886531',
    'nan/est/dir_beta/collapsed_gibbs': '36c9956bdb304772 5.31550910143',
    'sparse/beta_dir/rank/sample2': '0598247eb9722607 78247f5cf03affaa',
    'sparse/beta_dir/rank/sample9': '78a757033bb0c6ad 2b8c0534f9729b61',
    'sparse/beta_dir/rank/fcg': (
        "37fda085f9fdd914 090bb24f7e372031 67bbe1c340fd0927 86eb4b59d3be7b63 ('X_obs',)"),
    'sparse/beta_dir/rank/cvb0': (
        '5dd3ecc7e7849e24 16e79ea1c121aad6 f655eae8a035a441 01f12f926c705f30 '
        '92c4b4434a7f3fd3 30'),
    'sparse/beta_dir/truncation/sample2': 'b638ecb7c3b12401 af1ed71a87596b86',
    'sparse/beta_dir/truncation/sample9': '5e130e100a0b7255 4d6f804eaf59eeb6',
    'sparse/beta_dir/truncation/fcg': (
        "11c02302081ff8cc 1ea3fde09ac5ee73 bbce9fb7e74bbbb4 6fc778163028d0a8 ('X_obs',)"),
    'sparse/beta_dir/truncation/cvb0': (
        '0e26f6e9393cee01 4827fc11c5f66166 3ac7a2e71ed0c853 6f64ea02dce46f54 '
        'b36ace2b65595321 30'),
    'sparse/dir_beta/rank/sample2': 'd2cfec4ac17083e6 28899b1e1fa865ca',
    'sparse/dir_beta/rank/sample9': '08ed09cb0865b26e b0a0e741355dc63c',
    'sparse/dir_beta/rank/fcg': (
        "ff8f2e0fc6297aa3 87201790f1e50ffd c4e440779a526335 466027738ce54141 ('X_obs',)"),
    'sparse/dir_beta/rank/cvb0': (
        'ed6127479167d728 dff0ffa719a62ac7 90a5b297f146083a a327e036f27878b6 '
        '13a613d8da06a7df 30'),
    'sparse/dir_beta/truncation/sample2': '578f41d90144e7f3 c26ebc95f48f39d8',
    'sparse/dir_beta/truncation/sample9': 'eb7fdb06c9f8ec66 ce04f7a67eb69af2',
    'sparse/dir_beta/truncation/fcg': (
        "958de4009ee3294a a8b12abb2555d621 7e69f6e4475a39d2 aff9e0302fb0d5af ('X_obs',)"),
    'sparse/dir_beta/truncation/cvb0': (
        '5f8903f167bae994 74c9c1f6fba3c9b7 eb2c0c4f73bed68b 8ff6d8a0be3d2420 '
        '36cda7a2e49b352f 30'),
    'sparse/dir_dir/rank/sample2': '2ed621709c121038 1c2c174675fd0058',
    'sparse/dir_dir/rank/sample9': 'e73a8a469fde5600 22299eb09a4ea1e6',
    'sparse/dir_dir/rank/fcg': (
        "ef7cbb3ab784471b 30d25df6e58ed649 08f0bb17ea566818 e543a7815848e8fe ('X_obs',)"),
    'sparse/dir_dir/truncation/sample2': '9f41be0455a52ad8 b7fb2a815d6b4cbd',
    'sparse/dir_dir/truncation/sample9': '9978e309ec5689f1 0e5a3fad47e1f4c4',
    'sparse/dir_dir/truncation/fcg': (
        "5dc4e5688b5d36f6 3148e689540c2117 d75eaa535810d6d8 d274d3c21de66103 ('X_obs',)"),
    'sparse/est/beta_dir/collapsed_gibbs': '4b9766f363ac5586 6.18248571964',
    'sparse/est/beta_dir/cvb0': '340656d2a8c4fad8 6.53733320659',
    'sparse/est/dir_dir/None': '1a0375a32672022f 6.34722894402',
    'sparse/est/dir_beta/collapsed_gibbs': 'ba4f9d3577e29efa 6.27601777372',
    'sparse_hi/beta_dir/rank/sample2': '1f9bb65300afea13 4bb45b1e758fcf90',
    'sparse_hi/beta_dir/rank/sample9': '05f692e3c30ba805 269dd7af5457ee84',
    'sparse_hi/beta_dir/rank/fcg': (
        "f3d6b2f5bac29b35 7fd36c000f0b1985 fd7ead75b3761c58 fa7127de096376d2 ('row', "
        "'col')"),
    'sparse_hi/beta_dir/rank/cvb0': (
        '6528267bf50dea3b 7462a2c9f0be9ed3 c774a989670c1666 bdcb8a904650db39 '
        'e5ceb04bb571fd3c 30'),
    'sparse_hi/beta_dir/truncation/sample2': 'cc18d48c29ace313 ab71418110a12762',
    'sparse_hi/beta_dir/truncation/sample9': 'ce373e7b116fc00d 07c99370dfe627a7',
    'sparse_hi/beta_dir/truncation/fcg': (
        "597c4688f7d3430b 5e9282f73cd12b5f cae492e5fc7d5001 9fcc48823fe70756 ('row', "
        "'col')"),
    'sparse_hi/beta_dir/truncation/cvb0': (
        '000ef71099ed44d8 a025936726ae4e10 10783bbdc8f2902e e3057f6a07de2b3b '
        '57879172e60eea6e 30'),
    'sparse_hi/dir_beta/rank/sample2': 'ba24b95fa99c8421 124df0faaaada9b6',
    'sparse_hi/dir_beta/rank/sample9': '466ed5104709dfdf 09a5e1ff48a2d161',
    'sparse_hi/dir_beta/rank/fcg': (
        "930664514ef286ef a6d22b3c319b7c80 edb6ecdd10cb2b0f b44ca957953c9fff ('row', "
        "'col')"),
    'sparse_hi/dir_beta/rank/cvb0': (
        '17a2612779b45a49 1129c5ec102f5afa f90675f2b4e55542 4f8e51f7f569af8d '
        '57526577488f6f98 30'),
    'sparse_hi/dir_beta/truncation/sample2': '1a8f00ac303efb73 afc704fd9664c4d8',
    'sparse_hi/dir_beta/truncation/sample9': '11b0a10d8ed5fd0b 1e5996702ae78926',
    'sparse_hi/dir_beta/truncation/fcg': (
        "16fab30926fca4dd da9ff234fcf404a1 bbc44691e74fe896 e64f3c222ffc60a3 ('row', "
        "'col')"),
    'sparse_hi/dir_beta/truncation/cvb0': (
        'a2c1de5430ba5ae6 81a04f5dc46c894f ad5ccdb13a92e455 c6bb0bc9ad7785f3 '
        'b34fa6b80034b673 30'),
    'sparse_hi/dir_dir/rank/sample2': 'b1527ea9bd5fdb4d 369783d7b6282efe',
    'sparse_hi/dir_dir/rank/sample9': '63bdce465a0b4c84 3dbb9333fef7f44c',
    'sparse_hi/dir_dir/rank/fcg': (
        "6807be1871aa37f3 d431b003c8000a1d f4ef719dbd8574f7 30cdab5599067b49 ('row', "
        "'col')"),
    'sparse_hi/dir_dir/truncation/sample2': '7f3129edb78c02cd 9da33d0137da6760',
    'sparse_hi/dir_dir/truncation/sample9': '0123d44d4f48fd5f 4a2eb506d507f3f0',
    'sparse_hi/dir_dir/truncation/fcg': (
        "a80db8998cbfddbc 01264d110254b818 cd2300ec3ee6b8bf de9672797b7cee53 ('row', "
        "'col')"),
    'sparse_hi/est/beta_dir/collapsed_gibbs': 'c406e79345e8d95d 5.4917654472',
    'sparse_hi/est/beta_dir/cvb0': '837aecf0ec4bec5d 5.67694669812',
    'sparse_hi/est/dir_dir/None': '566552d125d0d6e8 5.65938886531',
    'sparse_hi/est/dir_beta/collapsed_gibbs': '36c9956bdb304772 5.31550910143',
    'cli/x.csv/collapsed_gibbs': 'rc=0 70496ffb2b409a40 d5cef02c7edbac2b',
    'cli/x.npz/collapsed_gibbs': 'rc=0 0b8ece69d47e05bf ade08d0865cc5747',
}
