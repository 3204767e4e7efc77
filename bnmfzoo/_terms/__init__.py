"""Implementations behind :mod:`bnmfzoo.likelihoods` (one module per term)."""


def register_term_data(model, name, X, mask, **info):
    """Record the data a likelihood term uses on ``model`` (attribute ``bnmfzoo_data``).

    Fitters that work on any model (e.g. :func:`bnmfzoo.inference.fit_particles`) look the data
    up there, so a user's own ``pm.Model`` needs no extra ``X=`` argument.
    """
    data = dict(getattr(model, "bnmfzoo_data", None) or {})
    data[name] = {"X": X, "mask": mask, **info}
    model.bnmfzoo_data = data
