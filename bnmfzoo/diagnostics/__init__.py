"""Diagnostics: Stein discrepancy and weights, coverage and distances, alignment, calibration."""

from bnmfzoo._lazy import lazy_namespace

_NAMES = {
    "stein_discrepancy": ".stein",
    "stein_kernel_matrix": ".stein",
    "stein_matrix": ".stein",
    "SteinMatrix": ".stein",
    "ksd_statistics": ".stein",
    "median_imq": "._kernels",
    "MedianIMQ": "._kernels",
    "PreconditionedIMQ": "._kernels",
    "score_function": ".stein",
    "stein_weights": ".weights",
    "imq_kernel": "._kernels",
    "IMQ": "._kernels",
    "BlockKernel": "._kernels",
    "l1_distance": ".distances",
    "angle_distance": ".distances",
    "weighted_angle_distance": ".distances",
    "frobenius_distance": ".distances",
    "pairwise_distances": ".coverage",
    "covering_number": ".coverage",
    "covering_curve": ".coverage",
    "coverage_table": ".coverage",
    "persistent_covering_number": ".coverage",
    "plot_covering_curves": ".coverage",
    "reconstruction_error": ".errors",
    "log_likelihood": ".errors",
    "align": ".alignment",
    "summary": ".weighted_summary",
    "sbc": ".calibration",
    "perplexity": ".heldout",
    "heldout_loglik": ".heldout",
    "predict_mean": ".heldout",
    "active_components": ".heldout",
}
__getattr__, __dir__ = lazy_namespace(__name__, _NAMES)
__all__ = sorted(_NAMES)
