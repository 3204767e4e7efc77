"""Mutational signatures: the field's file formats, matching, reference assignment, ranks.

The front end for signature users on the count family: read and write SigProfiler / COSMIC
matrices (:func:`read_catalog`, :func:`read_signatures`, :func:`write_matrix`), score
discovered signatures against true ones the field's way (:func:`discovery_scores`), estimate
the posterior over the number of signatures from the active signatures of one overfitted run
under a compressive prior (:func:`compressive_rank_posterior`) or from Chib's evidence
(:func:`rank_posterior`),
assign posterior signatures to a reference catalogue (:func:`assign`), and run the whole
workflow (:func:`extract`, the ``bnmfzoo signatures`` command). Names are imported on first
use.
"""

from bnmfzoo._base.lazy import lazy_namespace

_NAMES = {
    "discovery_scores": ".matching",
    "match_signatures": ".matching",
    "cosine_matrix": ".matching",
    "CHANNELS": ".formats",
    "read_catalog": ".formats",
    "read_signatures": ".formats",
    "write_matrix": ".formats",
    "chib_log_evidence": ".evidence",
    "rank_posterior": ".evidence",
    "compressive_rank_posterior": ".compressive",
    "assign": ".assignment",
    "alternative_signatures": ".alternatives",
    "extract": ".workflow",
    "write_outputs": ".workflow",
}
__getattr__, __dir__ = lazy_namespace(__name__, _NAMES)
__all__ = sorted(_NAMES)
