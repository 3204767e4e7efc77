"""The ``bnmfzoo signatures`` sub-command (parser and runner; imports the workflow lazily)."""

import argparse
import math

__all__ = ["add_parser", "parse_ranks"]

_EPILOG = """\
CATALOG is SigProfiler's layout: a MutationType column (A[C>A]A ...) and one column per
sample (tab-separated; .csv: comma-separated). Writes into DIR: ranks.tsv (rank, probability,
low, high: P(K | data), by default the fraction of draws of an overfitted model under a
compressive prior with K active signatures, over several chains; --rank-method chib: from
Chib's evidence over independent runs), signatures.tsv
(MutationType + one column per signature, at the most probable rank), exposures.tsv
(Samples + each signature's mutations with _low/_high), assignment.tsv (with --reference),
alternatives.tsv (with --alternatives: alternative signature sets and their posterior
masses under the Gamma-Poisson NMF at that rank, one row per set and signature: mass (the
set's probability among the sets found; 'unknown' for sets no particle reached, never 0),
mass_low/mass_high (95 %), mass_check (the independent check's; empty when not run),
mutations (expected mutations of the signature), share (of the set's mutations),
best_match/match_probability/cosine/call, cosine_to_first (best cosine to a signature of
Alt1: above 0.95 means the same signature)) and report.html. All files are written, or none.

example:
  bnmfzoo signatures Samples_SBS.txt --ranks 2-8 --reference COSMIC_v3.4_SBS_GRCh37.txt \\
      --out sigs
"""


def parse_ranks(text):
    """``"2-12"`` -> ``[2, ..., 12]``; ``"3,5,7"`` -> ``[3, 5, 7]``; one rank ``"4"``.

    Examples
    --------
    >>> parse_ranks("2-4"), parse_ranks("3,5")
    ([2, 3, 4], [3, 5])
    """
    try:
        if "-" in text:
            low, high = (int(v) for v in text.split("-", 1))
            ranks = list(range(low, high + 1))
        else:
            ranks = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"ranks must look like 2-12 or 3,5,7, got {text!r}")
    if not ranks or min(ranks) < 1 or len(set(ranks)) != len(ranks):
        raise argparse.ArgumentTypeError(f"ranks must be distinct positive integers, got "
                                         f"{text!r}")
    return ranks


def _cosine(text):
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be a cosine in (0, 1], got {text}")
    return value


def _positive(text):
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _shape(text):
    if text == "random":
        return text
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number or 'random', got {text}")
    return value


def _strength(text):
    if text == "unit":
        return text
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number or 'unit', got {text}")
    return value


def _at_least(low):
    def parse(text):
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {text}")
        return value
    return parse


def _run(args):
    import sys

    from bnmfzoo.signatures.workflow import extract, write_outputs

    def say(line):
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    dt = extract(args.catalog, ranks=args.ranks, reference=args.reference, cutoff=args.cutoff,
                 rank_method=args.rank_method, n_chains=args.chains, k_max=args.k_max,
                 n_runs=args.runs, n_burn=args.burn, n_keep=args.keep,
                 screen=not args.all_ranks,
                 block_rows=args.block_rows, likelihood=args.likelihood, shape=args.shape,
                 strength=args.strength, prior=args.prior, n_novel=args.novel,
                 alternatives=args.alternatives, budget_s=args.budget,
                 alternatives_options={"n_particles": args.particles},
                 random_seed=args.seed, progress=say)
    paths = write_outputs(dt, args.out)
    print(dt.attrs["note"])
    if "phi_median" in dt.attrs:
        lo, hi = dt.attrs["phi_interval"]
        phi = dt.attrs["phi_median"]
        print(f"negative-binomial shape phi {phi:.3g} ({lo:.3g}-{hi:.3g}): a cell expecting m "
              f"mutations has variance m (1 + m / phi), so cells expecting more than {phi:.3g} "
              "vary over twice as much as Poisson counts")
    if "strength" in dt.attrs:
        print(f"compression strength c {dt.attrs['strength']:.3g} (mu_k ~ InvGamma(c N + 1, "
              "epsilon c N))")
    if "shape_median" in dt.attrs:
        lo, hi = dt.attrs["shape_interval"]
        print(f"exposure shape a {dt.attrs['shape_median']:.3g} ({lo:.3g}-{hi:.3g}; learned)")
    print(f"wrote {', '.join(p.name for p in paths)} to {args.out} "
          f"({dt.attrs['cpu_seconds']:.0f} CPU s)")
    return 0


def add_parser(sub, formatter_class=argparse.RawDescriptionHelpFormatter):
    """Add ``signatures`` to the ``bnmfzoo`` command's sub-parsers ``sub``."""
    p = sub.add_parser(
        "signatures", help="mutational signatures: how many (P(K | data)), which, how sure",
        description="Extract mutational signatures from an SBS96 catalogue with a posterior "
                    "over their number, exposures with intervals and, given a reference "
                    "catalogue, the probability of each reference match.",
        epilog=_EPILOG, formatter_class=formatter_class)
    p.add_argument("catalog", help="SBS96 catalogue in SigProfiler's layout (.txt/.tsv/.csv)")
    p.add_argument("--ranks", type=parse_ranks, default=list(range(2, 13)),
                   help="numbers of signatures compared, e.g. 2-12 or 3,5,7 (default 2-12)")
    p.add_argument("--reference", default=None,
                   help="reference signatures in the same layout (e.g. COSMIC v3.4 SBS96)")
    p.add_argument("--cutoff", type=_cosine, default=0.9,
                   help="cosine below which a signature is reported novel (default 0.9)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--rank-method", choices=("compressive", "chib"), default="compressive",
                   help="how P(K | data) is computed (default compressive: active signatures "
                        "of an overfitted model, Zito & Miller 2024; chib: Chib's evidence)")
    p.add_argument("--likelihood", choices=("nb", "poisson"), default=None,
                   help="the counts' likelihood: nb, negative binomial with one "
                        "overdispersion for the catalogue (default with compressive), or "
                        "poisson (faster; the only one of chib)")
    p.add_argument("--shape", type=_shape, default=1.0,
                   help="compressive: Gamma shape a of the exposures (default 1, Zito & "
                        "Miller's), or 'random' to learn it (a ~ Gamma(1, 1))")
    p.add_argument("--strength", type=_strength, default=None,
                   help="compressive: compression strength c apart from the exposures' shape, "
                        "mu_k ~ InvGamma(c N + 1, epsilon c N); 'unit' is c = 1 / N, which "
                        "compresses slowly: give it --burn 6000 or more "
                        "(default: c = a, Zito & Miller's)")
    p.add_argument("--prior", choices=("de_novo", "reference"), default="de_novo",
                   help="compressive: every signature de novo (default), or a Dirichlet prior "
                        "centred on each --reference signature beside --novel de novo ones "
                        "(Zito & Miller's informative prior); P(K) is then the number of "
                        "active reference and de novo signatures, presuming the catalogue's "
                        "signatures are close to the reference's; not better calibrated "
                        "than de novo on co-occurring signatures")
    p.add_argument("--novel", type=_at_least(0), default=5,
                   help="--prior reference: de novo signatures beside the reference (default 5)")
    p.add_argument("--chains", type=_at_least(1), default=4,
                   help="compressive: Gibbs chains from different starts (default 4)")
    p.add_argument("--k-max", type=_at_least(2), default=None,
                   help="compressive: signatures of the overfitted model (default "
                        "min(2 x the largest rank, 20))")
    p.add_argument("--runs", type=_at_least(1), default=2,
                   help="chib: evidence runs per evaluated rank (default 2: their spread "
                        "catches a run stuck in another mode; 1: the within-run error only)")
    p.add_argument("--burn", type=_at_least(1), default=None,
                   help="Gibbs burn-in sweeps (default 2000 compressive, 300 chib)")
    p.add_argument("--keep", type=_at_least(10), default=None,
                   help="kept Gibbs sweeps per chain or run (default 1000 compressive, "
                        "400 chib)")
    p.add_argument("--all-ranks", action="store_true",
                   help="chib: evaluate every rank (default: only where the variational "
                        "bound and then the evidence point; the others are reported not "
                        "evaluated)")
    p.add_argument("--block-rows", type=_at_least(1), default=1,
                   help="chib: channels per block of Chib's estimate (default 1; larger is "
                        "faster but its Rao-Blackwell averages degrade)")
    p.add_argument("--alternatives", action="store_true",
                   help="also list alternative signature sets at the most probable rank with "
                        "their posterior masses (SMC under the Gamma-Poisson NMF at that "
                        "rank) in alternatives.tsv; minutes of CPU")
    p.add_argument("--budget", type=_positive, default=None,
                   help="CPU seconds allowed to the whole run; the sweeps stop when it runs "
                        "out, with one line saying how far they got, and nothing is written "
                        "(with --alternatives their SMC gets what is left; default: no limit)")
    p.add_argument("--particles", type=_at_least(2), default=500,
                   help="--alternatives: SMC particles per run (default 500; fewer miss "
                        "light alternatives; each costs ~0.85 CPU s per run on 21 genomes at "
                        "rank 5, 4 runs; with --budget a pilot says how many fit)")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=_run)
    return p
