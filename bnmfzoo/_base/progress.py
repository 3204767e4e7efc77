"""Progress bars with the same ``progressbar=`` switch PyMC uses."""

from tqdm.auto import tqdm


def progress(iterable=None, *, total=None, desc=None, progressbar=True):
    """Wrap ``iterable`` (or ``range(total)``) in a tqdm bar unless ``progressbar`` is false."""
    if iterable is None:
        iterable = range(total)
    if not progressbar:
        return iterable
    return tqdm(iterable, total=total, desc=desc, leave=False, dynamic_ncols=True)
