"""The ``bnmfzoo`` command: ``datasets``, ``demo``, ``fit``, ``report``.

Examples
--------
.. code-block:: console

    $ bnmfzoo datasets
    $ bnmfzoo demo --out bnmfzoo-demo
    $ bnmfzoo fit ratings.csv --model exponential_gaussian --rank 5 --method gibbs --out fit.nc
    $ bnmfzoo report fit.nc
"""

import argparse
import sys


def _cmd_datasets(args):
    from bnmfzoo.datasets import list_datasets

    table = list_datasets(data_home=args.data_home)
    rows = table.to_dict("records") if hasattr(table, "to_dict") else list(table)
    if not rows:
        print("no datasets registered")
        return 0
    cols = list(rows[0])
    widths = {c: max(len(str(c)), *(len(_fmt(r[c])) for r in rows)) for c in cols}
    print("  ".join(str(c).ljust(widths[c]) for c in cols))
    for r in rows:
        print("  ".join(_fmt(r[c]).ljust(widths[c]) for c in cols))
    return 0


def _fmt(value):
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, tuple):
        return " x ".join(str(v) for v in value)
    return str(value)


def _cmd_demo(args):
    from bnmfzoo._demo import run_demo

    run_demo(args.out, quick=args.quick, random_seed=args.seed, progressbar=not args.quiet)
    return 0


def _cmd_fit(args):
    from bnmfzoo._fitcli import fit_file

    fit_file(
        args.data, model=args.model, rank=args.rank, method=args.method, out=args.out,
        draws=args.draws, tune=args.tune, chains=args.chains, random_seed=args.seed,
        progressbar=not args.quiet,
    )
    return 0


def _cmd_report(args):
    from bnmfzoo.report import write_report

    path = write_report(args.result, out_dir=args.out)
    print(f"report written to {path}")
    return 0


def build_parser():
    """Return the argument parser of the ``bnmfzoo`` command."""
    parser = argparse.ArgumentParser(
        prog="bnmfzoo", description="Bayesian non-negative matrix factorization on PyMC."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("datasets", help="list the datasets with shape, type and observed fraction")
    p.add_argument("--data-home", default=None, help="folder holding the data files")
    p.set_defaults(func=_cmd_datasets)

    p = sub.add_parser("demo", help="run a complete analysis on built-in data")
    p.add_argument("--out", default="bnmfzoo-demo", help="output folder (default ./bnmfzoo-demo)")
    p.add_argument("--quick", action="store_true", help="fewer draws and particles (for tests)")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("fit", help="fit a model to a CSV/TSV, .npy or netCDF matrix")
    p.add_argument("data", help="D x N matrix; NaN or empty cells are missing")
    p.add_argument("--model", default="exponential_gaussian")
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--method", default=None, help="inference method (default: the model's)")
    p.add_argument("--out", required=True, help="result file (.nc)")
    p.add_argument("--draws", type=int, default=500)
    p.add_argument("--tune", type=int, default=200)
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_fit)

    p = sub.add_parser("report", help="write an HTML report (and PNGs) for a result file")
    p.add_argument("result", help="a .nc file written by `bnmfzoo fit` or `bnmfzoo demo`")
    p.add_argument("--out", default=None, help="output folder (default: beside the result)")
    p.set_defaults(func=_cmd_report)
    return parser


def main(argv=None):
    """Entry point of the ``bnmfzoo`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError, OSError) as err:
        print(f"bnmfzoo {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

