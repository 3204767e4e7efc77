"""The ``bnmfzoo`` command: ``datasets``, ``demo``, ``fit``, ``report``.

Examples
--------
.. code-block:: console

    $ bnmfzoo datasets
    $ bnmfzoo demo --out bnmfzoo-demo
    $ bnmfzoo fit ratings.csv --model exponential_gaussian --rank 5 --method gibbs --out fit.nc
    $ bnmfzoo fit votes.csv --model beta_dir --truncation 100 --out votes.nc
    $ bnmfzoo report fit.nc

Exit codes: 0 success, 2 bad input, a file too large for memory or a full disk (one line on
stderr naming the file or option), 130 interrupted (Ctrl-C or SIGTERM; nothing is written and an
existing result file is left as it was).
"""

import argparse
import logging
import signal
import sys
import threading
from contextlib import contextmanager

from bnmfzoo._cli.layout_options import add_layout_options


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
        progressbar=not args.quiet, header=args.header, index_col=args.index_col,
        model_kwargs=_model_kwargs(args), scheduler=args.scheduler, long=args.long,
        thin=args.thin, keep_all=args.keep_all, log_likelihood=args.log_likelihood,
        shape=args.shape, transpose=args.transpose,
        **({"block_rows": args.block_rows} if args.block_rows is not None else {}),
    )
    return 0


def _precheck_fit(args):
    """Size the data file from its headers before anything heavy (PyMC) is imported."""
    from bnmfzoo._cli.declared import check_data_size

    if args.method == "blocked_gibbs":  # read block by block: never loaded whole
        return
    check_data_size(args.data, rank=args.rank or args.truncation)


def _shape(text):
    try:
        D, N = (int(v) for v in text.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be two integers D,N, got {text!r}") from None
    if D < 1 or N < 1:
        raise argparse.ArgumentTypeError(f"must be two positive integers D,N, got {text!r}")
    return D, N


#: command-line option -> (model keyword, models it applies to)
_HYPER_OPTIONS = {
    "truncation": ("truncation", ("beta_dir", "dir_beta", "dir_dir")),
    "ard": ("ard", ("exponential_gaussian", "tri_exponential_gaussian")),
    "lambda_": ("lambda_", ("exponential_gaussian", "silf", "uniform_noise")),
    "sigma": ("sigma", ("exponential_gaussian", "tri_exponential_gaussian")),
}


def _model_kwargs(args):
    from bnmfzoo._registry import model_options

    kwargs = {}
    for dest, (key, models) in _HYPER_OPTIONS.items():
        value = getattr(args, dest, None)
        if value is None or value is False:
            continue
        flag = "--" + dest.rstrip("_")
        if args.model not in models:
            raise ValueError(f"{flag} does not apply to model {args.model!r} (it applies to "
                             f"{', '.join(models)})")
        kwargs[key] = value
    options = model_options(args.model)
    for item in args.model_arg or ():
        key, value = item
        if key not in options and key + "_" in options:
            key += "_"
        if key not in options:
            raise ValueError(f"--model-arg {key}: model {args.model!r} has no such option; its "
                             f"options are {', '.join(sorted(options))}")
        kwargs[key] = value
    return kwargs


def _int_at_least(low, high=None):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {text!r}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be an integer from {low} to {high}, got "
                                             f"{text!r}")
        return value
    return parse


#: largest --chains accepted (chains run one after the other; more is a typo)
MAX_CHAINS = 1000


def _thin(text):
    if text.strip().lower() == "auto":
        return "auto"
    return _int_at_least(1)(text)


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _key_value(text):
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"must look like key=value, got {text!r}")
    raw = raw.strip()
    low = raw.lower()
    if low in ("true", "false"):
        return key, low == "true"
    if low == "none":
        return key, None
    for cast in (int, float):
        try:
            return key, cast(raw)
        except ValueError:
            pass
    return key, raw


def _fit_epilog():
    from bnmfzoo._registry import DEFAULT_METHOD, MODEL_METHODS

    lines = ["models and their methods (the first is the default):"]
    for model, methods in MODEL_METHODS.items():
        assert methods[0] == DEFAULT_METHOD[model]
        lines.append(f"  {model:<26}{', '.join(methods)}")
    lines += [
        "",
        "binary models (beta_dir, dir_beta, dir_dir): --truncation K is the truncated",
        "nonparametric prior (gamma_k = 1/K) that Lumbreras et al. (2020) used with K = 100 for",
        "all their experiments, and the default when neither --rank nor --truncation is given;",
        "--rank K is the parametric model (gamma_k = 1 per component), a different, flatter prior.",
        "",
        "data files: .csv/.tsv/.txt (header row and row-label column detected, see --header and",
        "--index-col; empty, NA and NaN cells are missing), .npy, or .nc with one variable.",
        "sparse data (never made dense for gibbs, gibbs_nmtf, vb, icm, multiplicative,",
        "collapsed_gibbs, collapsed_gibbs_dirdir, cvb0): a scipy.sparse .npz file",
        "(scipy.sparse.save_npz; stored entries are the observed ones, explicit zeros",
        "included), or with --long a .csv/.tsv/.txt of observed entries, one per line:",
        "row,col,value (header row optional). For the count models (poisson,",
        "negative_binomial) the cells not listed are zero counts instead, only the",
        "listed nonzeros cost anything, a cell listed twice holds the sum of its counts",
        "(other models refuse duplicates), and --shape D,N keeps rows none of whose",
        "cells is listed. Other methods get the dense matrix with a",
        "warning giving its size, up to 50 million cells, and refuse larger data.",
        "Exit codes: 0 ok, 2 bad input, 130 interrupted (nothing written).",
    ]
    return "\n".join(lines)


def _cmd_report(args):
    from bnmfzoo.report import write_report

    path = write_report(args.result, out_dir=args.out)
    print(f"report written to {path}")
    return 0


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keep the epilog's layout."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr (exit code 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser():
    """Return the argument parser of the ``bnmfzoo`` command."""
    parser = _Parser(
        prog="bnmfzoo", description="Bayesian non-negative matrix factorization on PyMC."
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("datasets", help="list the datasets with shape, type and observed fraction")
    p.add_argument("--data-home", default=None, help="folder holding the data files")
    p.set_defaults(func=_cmd_datasets)

    p = sub.add_parser("demo", help="run a complete analysis on built-in data")
    p.add_argument("--out", default="bnmfzoo-demo", help="output folder (default ./bnmfzoo-demo)")
    p.add_argument("--quick", action="store_true", help="fewer draws and particles (for tests)")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_demo)

    from bnmfzoo._registry import MODELS

    p = sub.add_parser(
        "fit", help="fit a model to a CSV/TSV, .npy or netCDF matrix",
        description="Fit a Bayesian NMF model to a D x N matrix and write the posterior "
                    "(an ArviZ DataTree) to a .nc file.",
        epilog=_fit_epilog(), formatter_class=_HelpFormatter,
    )
    p.add_argument("data", help="D x N matrix (.csv, .tsv, .txt, .npy, .nc; NaN, NA or empty "
                                "cells are missing), or sparse data (.npz, or --long; single-cell "
                                "counts: .h5ad or a 10x matrix.mtx folder; chunked matrices: "
                                ".zarr, .hdf5, or .h5 holding X or matrix)")
    p.add_argument("--model", default="exponential_gaussian", choices=list(MODELS),
                   metavar="MODEL", help="one of: " + ", ".join(MODELS)
                   + " (default: %(default)s)")
    p.add_argument("--rank", type=_int_at_least(1), default=None,
                   help="number of components (required except for the binary models)")
    p.add_argument("--truncation", type=_int_at_least(1), default=None,
                   help="binary models: truncation K of the nonparametric prior (default 100 "
                        "when --rank is not given); not with --rank")
    p.add_argument("--method", default=None,
                   help="inference method (default: the model's, see below)")
    p.add_argument("--out", required=True,
                   help="result file; must end in .nc and its folder must exist")
    p.add_argument("--draws", type=_int_at_least(1), default=500,
                   help="kept draws per chain (samplers; default %(default)s)")
    p.add_argument("--tune", type=_int_at_least(0), default=200,
                   help="tuning / burn-in iterations per chain (samplers; default %(default)s)")
    p.add_argument("--chains", type=_int_at_least(1, MAX_CHAINS), default=2,
                   help=f"chains (samplers; default %(default)s, at most {MAX_CHAINS})")
    p.add_argument("--thin", type=_thin, default="auto", metavar="{auto,N}",
                   help="store every N-th draw of MCMC methods (default auto: at most 100 "
                        "stored draws per chain)")
    p.add_argument("--keep-all", action="store_true",
                   help="store the full result: every draw (unless --thin N), every component "
                        "of a truncated model, float64 (default: thinned, active components "
                        "only, a float32 posterior when it exceeds 64 MB; all compressed)")
    p.add_argument("--log-likelihood", choices=("auto", "yes", "float32", "no"),
                   default="auto",
                   help="record the pointwise log_likelihood group that az.loo / az.compare "
                        "read (MCMC methods; default auto: when chains x draws x observed "
                        "entries is at most 1e7, else skipped with a warning; float32 halves "
                        "its size)")
    p.add_argument("--seed", type=_int_at_least(0), default=None,
                   help="random seed (default: a fresh one)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bars and no PyMC log messages")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="Dask scheduler address (e.g. tcp://10.0.0.5:8786): run each MCMC "
                        "chain (or the particles) as a task there; same result as serial")
    p.add_argument("--block-rows", type=_int_at_least(1), default=None,
                   help="--method blocked_gibbs (models poisson, exponential_gaussian; one "
                        "chain): rows per block (columns when the matrix is wider than tall; "
                        "default about 4 M stored entries per block). That method reads "
                        ".h5ad, Zarr, HDF5 and 10x folders block by block, on the "
                        "--scheduler's workers when given")
    g = p.add_argument_group("data layout (delimited text)")
    g.add_argument("--long", action="store_true",
                   help="the file lists observed entries as row,col,value lines (sparse data; "
                        "see below)")
    add_layout_options(g)
    g.add_argument("--shape", type=_shape, default=None, metavar="D,N",
                   help="--long: the matrix is D x N and the row and column keys are 0-based "
                        "positions, so a row or column none of whose cells is listed is kept "
                        "(default: the rows and columns are the keys listed)")
    g.add_argument("--transpose", action="store_true",
                   help="fit the transposed matrix (e.g. SBS96 catalogues with the channels "
                        "as rows: the count models take genomes as rows)")
    g = p.add_argument_group("model hyperparameters (see the model's docstring)")
    g.add_argument("--ard", action="store_true", default=None,
                   help="exponential_gaussian, tri_exponential_gaussian: ARD priors")
    g.add_argument("--lambda", dest="lambda_", type=_positive_float, default=None,
                   help="exponential_gaussian, silf, uniform_noise: exponential prior rate "
                        "(model default 0.1, 1, 1)")
    g.add_argument("--sigma", type=_positive_float, default=None,
                   help="exponential_gaussian, tri_exponential_gaussian: fixed noise standard "
                        "deviation (default: learned)")
    g.add_argument("--model-arg", action="append", type=_key_value, metavar="KEY=VALUE",
                   help="any other keyword of the model function, e.g. gamma=0.5 (repeatable)")
    p.set_defaults(func=_cmd_fit, precheck=_precheck_fit)

    p = sub.add_parser("report", help="write an HTML report (and PNGs) for a result file")
    p.add_argument("result", help="a .nc file written by `bnmfzoo fit` or `bnmfzoo demo`")
    p.add_argument("--out", default=None, help="output folder (default: beside the result)")
    p.set_defaults(func=_cmd_report)

    from bnmfzoo._cli.masses import add_parser as add_masses
    from bnmfzoo.signatures.command import add_parser as add_signatures

    add_signatures(sub, formatter_class=_HelpFormatter)
    add_masses(sub, formatter_class=_HelpFormatter)
    return parser


@contextmanager
def _interruptible():
    """Turn SIGINT and SIGTERM into :class:`~bnmfzoo._fitcli.Interrupted`, raised where safe.

    While PyMC samples (:data:`~bnmfzoo._fitcli.SAMPLING` set) the handler only records the
    request; the sampler's per-draw callback raises it (PyMC would swallow a
    ``KeyboardInterrupt`` and go on with the next chain). Elsewhere it raises at once when the
    signal lands in own code (:func:`~bnmfzoo._base.interrupts.own_code`), and otherwise at
    the next own line (:class:`~bnmfzoo._base.interrupts.Deferral`): raised in the library
    code that numba's dispatcher runs while it unboxes a kernel's generator argument, it
    crashed the process (``bnmfzoo masses``: 3 of 41 Ctrl-Cs). If no own line runs within
    :data:`~bnmfzoo._fitcli.DEFER_S` seconds, the signal is sent again and raised wherever it
    lands. When a raise lands in code whose exceptions Python ignores (a weakref callback or
    ``__del__`` of own code), it is not lost: the signal is sent again and handled at the next
    point where the raise takes effect, with no "Exception ignored" lines on stderr. It is
    sent from another thread a millisecond later: sent from inside the unraisable hook, the
    handler ran inside the hook, whose exceptions Python ignores too. A signal that still lands
    before the hook returns (the thread can start late on a loaded machine) is sent again.
    """
    from bnmfzoo import _fitcli
    from bnmfzoo._base.interrupts import Deferral, own_code
    from bnmfzoo._fitcli import INTERRUPT, RECEIVED, SAMPLING, Interrupted

    timers = []
    deferral = Deferral()

    def send_again(signum, after):
        timer = threading.Timer(after, signal.pthread_kill, (threading.main_thread().ident,
                                                            signum))
        timer.daemon = True
        timer.start()
        return timer

    def inside_hook(frame):  # a frame of the unraisable hook below (Python ignores its raises)
        while frame is not None and frame.f_code is not unraisable.__code__:
            frame = frame.f_back
        return frame is not None

    def handler(signum, frame):
        RECEIVED.append(signum)
        INTERRUPT.set()
        if SAMPLING.is_set():
            return
        if inside_hook(frame):  # the signal the hook sends again landed before it returned
            timers.append(send_again(signum, 0.001))  # (a loaded machine): once more, later
            return
        if (frame is not None and not own_code(frame.f_code.co_filename)
                and deferral.waited() < 0.9 * _fitcli.DEFER_S):
            if not deferral.pending:  # raised at the next own line, or, if none runs in
                timers.append(send_again(signum, _fitcli.DEFER_S))  # DEFER_S, wherever it
                deferral.arm(Interrupted(signum), frame)  # lands then (armed last: own calls
            return  # made after it raise)
        deferral.disarm()
        raise Interrupted(signum)

    previous_hook = sys.unraisablehook

    def unraisable(u):
        if isinstance(u.exc_value, Interrupted):  # swallowed where it was raised: again,
            send_again(u.exc_value.signum, 0.001)  # after this hook returns
            return
        previous_hook(u)

    def clear():
        deferral.close()
        INTERRUPT.clear()
        RECEIVED.clear()

    clear()
    try:
        previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread: leave Ctrl-C alone
        yield
        return
    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        for t in timers:  # an interrupt already raised needs no second signal
            t.cancel()
        clear()  # nothing left for a later call in this process (a fit would stop at once)
        sys.unraisablehook = previous_hook
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextmanager
def _quiet_logs(quiet):
    """While ``quiet``: PyMC's and PyTensor's log lines below ERROR, bnmfzoo's below WARNING."""
    if quiet:
        import pymc  # noqa: F401  (pymc sets its logger's level on import: import it first)
    names = {"pymc": logging.ERROR, "pytensor": logging.ERROR, "bnmfzoo": logging.WARNING}
    loggers = [logging.getLogger(name) for name in names] if quiet else []
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(names[lg.name])
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def main(argv=None):
    """Entry point of the ``bnmfzoo`` command (exit 128 + signal number when interrupted).

    SIGTERM is turned into an interrupt from the start (one line on stderr, exit 143, like
    Ctrl-C's 130), not only once the command's own handlers are set.
    """
    previous = None
    try:
        if hasattr(signal, "SIGTERM"):
            try:
                previous = signal.signal(signal.SIGTERM, _early_term)
            except ValueError:  # not the main thread
                pass
        return _main(argv)
    except KeyboardInterrupt as err:  # Ctrl-C before the handlers, or from inside a fit
        signum = int(getattr(err, "signum", signal.SIGINT))
        print(f"bnmfzoo: interrupted; no result written{_by(signum)}", file=sys.stderr)
        return 128 + signum
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _by(signum):
    """`` (SIGTERM)`` for a signal other than Ctrl-C's SIGINT, else nothing."""
    return "" if signum == signal.SIGINT else f" ({signal.Signals(signum).name})"


class _Terminated(KeyboardInterrupt):
    """SIGTERM before the command's handlers were set."""

    signum = int(getattr(signal, "SIGTERM", 15))


def _early_term(signum, frame):
    raise _Terminated()


def _main(argv):
    from bnmfzoo._fitcli import Interrupted

    parser = build_parser()
    args = parser.parse_args(argv)
    if hasattr(signal, "SIGXFSZ"):  # a file-size limit: an EFBIG error (one line), not a kill
        try:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        except ValueError:  # not the main thread
            pass
    try:
        if getattr(args, "precheck", None) is not None:  # sizes, before PyMC is imported
            args.precheck(args)
        with _interruptible(), _quiet_logs(getattr(args, "quiet", False)):
            return args.func(args)
    except (Interrupted, KeyboardInterrupt) as err:  # KeyboardInterrupt: from inference.sample
        signum = int(getattr(err, "signum", signal.SIGINT))
        print(f"bnmfzoo {args.command}: interrupted; no result written{_by(signum)}",
              file=sys.stderr)
        return 128 + signum
    except (ValueError, TypeError, FileNotFoundError, OSError, MemoryError) as err:
        text = str(err).splitlines()[0] if str(err) else type(err).__name__
        if isinstance(err, MemoryError):
            text = "out of memory" + (f": {text}" if str(err) else "")
        print(f"bnmfzoo {args.command}: error: {text}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

