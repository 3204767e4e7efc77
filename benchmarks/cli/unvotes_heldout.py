"""Held-out UN votes through ``bnmfzoo fit`` and ``bnmfzoo report`` at real size (issue #35).

The paper's model and defaults (``--model beta_dir``: truncation 100, collapsed Gibbs, the
command's draws 500 / tune 200 / chains 2) on ``unvotes_coldwar`` (100 countries x 3,638 roll
calls, abstentions missing) with 10 % of the observed entries held out (seed 0). The data go
through a pandas CSV (``DataFrame.to_csv``: country names as row labels, numeric roll-call IDs
as column names) so the reader's round trip is exercised too. Each command runs in its own
process under ``/usr/bin/time -v`` (peak RSS, CPU seconds); the script prints the result size,
the held-out log-likelihood per entry (posterior predictive probability from the stored
draws' mean of ``A @ W`` over the active components, and from the Rao-Blackwellized ``X_mean``
of all components) and the per-roll-call-mean baseline.

Usage (from the project root; about 10 CPU minutes)::

    nice -n 15 python -m benchmarks.cli.unvotes_heldout [--stage STAGE] [--dir DIR]
"""

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from benchmarks._common import RESULTS


def _timed(cmd):
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    err = proc.stderr
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", err).group(1)) * 1024
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", err).group(1))
    system = float(re.search(r"System time \(seconds\): ([\d.]+)", err).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time.*: ([\d:.]+)", err).group(1)
    return dict(code=proc.returncode, peak_gb=peak / 1e9, cpu_s=user + system, wall=wall,
                stdout=proc.stdout[-2000:], stderr_tail=err[-1500:] if proc.returncode else "")


def _matrix():
    """``unvotes_coldwar`` when its file is at hand, else synthetic votes of the same size.

    The synthetic stand-in (the UN file is not in the shared data and this machine has no
    network): 100 countries x 3,638 roll calls, each country a Dirichlet(0.3) mix of 4 blocs,
    each bloc voting yes on a roll call with a Beta(0.5, 0.5) probability, 25 % of the entries
    missing at random (abstentions / absences); the Beta-Dir model's own generative story with
    the paper's K-bloc reading of the UN data.
    """
    import xarray as xr

    from bnmfzoo.datasets import load_nbmf

    try:
        return load_nbmf("unvotes_coldwar"), "unvotes_coldwar"
    except Exception:  # noqa: BLE001 - not downloadable here: the synthetic stand-in
        rng = np.random.default_rng(35)
        D, N, K = 100, 3638, 4
        A = rng.dirichlet(np.full(K, 0.3), size=D)
        W = rng.beta(0.5, 0.5, size=(K, N))
        V = (rng.random((D, N)) < A @ W).astype(float)
        V[rng.random((D, N)) < 0.25] = np.nan
        return xr.DataArray(V, dims=("row", "col"), coords={
            "row": [f"country_{i:03d}" for i in range(D)],
            "col": np.arange(N) + 1000}), "synthetic 100 x 3638, 4 blocs, 25% missing"


def _data(folder):
    import pandas as pd

    V, source = _matrix()
    X = V.values.copy()
    rng = np.random.default_rng(0)
    obs = np.flatnonzero(~np.isnan(X))
    held = rng.choice(obs, size=obs.size // 10, replace=False)
    truth = X.flat[held].copy()
    X.flat[held] = np.nan
    df = pd.DataFrame(X, index=[str(r) for r in V["row"].values],
                      columns=list(V["col"].values))
    df.to_csv(folder / "unvotes_train.csv")
    np.savez(folder / "heldout.npz", held=held, truth=truth, train=X)
    return df, source


def _loglik(p, y):
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return float(np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


def evaluate(folder, name="unvotes.nc"):
    import xarray as xr

    h = np.load(folder / "heldout.npz")
    held, truth, train = h["held"], h["truth"], h["train"]
    dt = xr.open_datatree(folder / name)
    post = dt["posterior"]
    A = post["A"].values.astype(np.float64)
    W = post["W"].values.astype(np.float64)
    mean_AW = np.einsum("cdrk,cdkn->rn", A, W) / (A.shape[0] * A.shape[1])
    out = {"stored_factors": int(post.sizes["factor"]), "stored_draws": int(post.sizes["draw"]),
           "chains": int(post.sizes["chain"]),
           "heldout_ll_stored_draws": _loglik(mean_AW.flat[held], truth)}
    if "rao_blackwell" in dt.children:
        out["heldout_ll_rao_blackwell"] = _loglik(dt["rao_blackwell"]["X_mean"].values.flat[held],
                                                  truth)
    col_mean = np.nanmean(train, axis=0)
    out["heldout_ll_roll_call_mean"] = _loglik(np.broadcast_to(col_mean, train.shape).flat[held],
                                               truth)
    out["n_heldout"] = int(held.size)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", default="all",
                        choices=("fit", "keep-all", "compact-from-full", "report", "all"))
    parser.add_argument("--dir", default=str(RESULTS / "cli_unvotes"))
    args = parser.parse_args(argv)
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    record_path = folder / "record.json"
    record = json.loads(record_path.read_text()) if record_path.exists() else {}
    py = [sys.executable, "-m", "bnmfzoo.cli"]
    if args.stage in ("fit", "all"):
        df, source = _data(folder)
        record["data"] = {"source": source, "shape": list(df.shape),
                          "missing": int(df.isna().to_numpy().sum())}
        record["fit"] = _timed([*py, "fit", str(folder / "unvotes_train.csv"), "--model",
                                "beta_dir", "--seed", "1", "--quiet", "--out",
                                str(folder / "unvotes.nc")])
        record["fit"]["result_mb"] = (folder / "unvotes.nc").stat().st_size / 1e6
        record["heldout"] = evaluate(folder)
        record_path.write_text(json.dumps(record, indent=1))
    if args.stage in ("keep-all", "all"):  # the full result, thinned by 5 as the reference
        record["fit_keep_all"] = _timed([*py, "fit", str(folder / "unvotes_train.csv"),
                                         "--model", "beta_dir", "--seed", "1", "--quiet",
                                         "--keep-all", "--thin", "5", "--out",
                                         str(folder / "unvotes_all.nc")])
        record["fit_keep_all"]["result_mb"] = (folder / "unvotes_all.nc").stat().st_size / 1e6
        record["heldout_keep_all"] = evaluate(folder, "unvotes_all.nc")
        record_path.write_text(json.dumps(record, indent=1))
    if args.stage == "compact-from-full":  # the default result, rebuilt from the full one
        # (same seed and thinning: the same chain), e.g. after a change of the active rule
        import xarray as xr

        from bnmfzoo._cli.sizing import compact
        from bnmfzoo._fitcli import atomic_write

        full = xr.open_datatree(folder / "unvotes_all.nc").load()
        small, encoding = compact(full, truncated=True)
        atomic_write(small, folder / "unvotes.nc", encoding=encoding)
        record["compact_from_full"] = {"result_mb": (folder / "unvotes.nc").stat().st_size / 1e6,
                                       "heldout": evaluate(folder)}
        record_path.write_text(json.dumps(record, indent=1))
    if args.stage in ("report", "all"):
        record["report"] = _timed([*py, "report", str(folder / "unvotes.nc")])
        record_path.write_text(json.dumps(record, indent=1))
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
