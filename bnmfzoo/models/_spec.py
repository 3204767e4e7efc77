"""What our inference methods need to know about a model built by :mod:`bnmfzoo.models`.

Each model function attaches a :class:`ModelSpec` to the ``pm.Model`` it returns (attribute
``bnmfzoo_spec``). Step methods and fitters read it with :func:`get_spec`, which raises a clear
``TypeError`` for a model they do not fit (a user's own ``pm.Model`` without a spec, or another
family). Methods that work on *any* PyMC model (Stein discrepancy, particles, NUTS) do not need it.
"""

from dataclasses import dataclass, field

import numpy as np
import xarray as xr

SPEC_ATTR = "bnmfzoo_spec"


@dataclass(frozen=True)
class ModelSpec:
    """Description of a bnmfzoo model.

    Attributes
    ----------
    family : str
        ``"exponential_gaussian"``, ``"tri_exponential_gaussian"``, ``"silf"``,
        ``"uniform_noise"``, ``"beta_dir"``, ``"dir_beta"`` or ``"dir_dir"``.
    X : xarray.DataArray
        The data (row, col); NaN where not observed.
    mask : numpy.ndarray of bool
        True where observed.
    rank : int or tuple of int
        R, or (K, L) for the tri-factorization.
    hyper : dict
        Hyperparameters by name (e.g. ``lambda_``, ``alpha_tau``, ``beta_tau``, ``sigma``,
        ``ard``, ``alpha0``, ``beta0``) exactly as the model used them.
    var_names : dict
        Role -> PyMC variable name (e.g. ``{"A": "A", "W": "W", "tau": "tau"}``).
    entries : bnmfzoo._entries.LongMatrix or None
        The observed entries in long format when the data came sparse (``scipy.sparse`` or
        :func:`bnmfzoo.long_format`); ``X`` and ``mask`` are then
        :class:`~bnmfzoo._entries.DenseOnDemand` views, built densely only if read, and
        sparse-aware methods (Gibbs, VB) use ``entries`` instead. None for dense data.
    """

    family: str
    X: xr.DataArray
    mask: np.ndarray
    rank: object
    hyper: dict = field(default_factory=dict)
    var_names: dict = field(default_factory=dict)
    entries: object = None

    @property
    def X_values(self):
        """Data as a float array with zeros where unobserved (safe for masked products)."""
        return np.where(self.mask, np.nan_to_num(self.X.values), 0.0)


def attach_spec(model, spec):
    """Attach ``spec`` to ``model`` and return the model."""
    setattr(model, SPEC_ATTR, spec)
    return model


def get_spec(model, *, families, method):
    """Return the :class:`ModelSpec` of ``model`` or raise a ``TypeError`` naming ``method``.

    Parameters
    ----------
    model : pymc.Model
    families : str or tuple of str
        The families ``method`` can handle.
    method : str
        Name used in the error message (e.g. ``"GibbsNMF"``).
    """
    if isinstance(families, str):
        families = (families,)
    spec = getattr(model, SPEC_ATTR, None)
    if spec is None:
        raise TypeError(
            f"{method} needs a model built by bnmfzoo.models ({', '.join(families)}); "
            "this pm.Model has no bnmfzoo specification. Use NUTS, fit_particles or "
            "stein_discrepancy for your own models."
        )
    if spec.family not in families:
        raise TypeError(
            f"{method} fits {', '.join(families)} models, not a {spec.family!r} model"
        )
    return spec
