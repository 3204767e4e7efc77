"""MovieLens 100K ratings (GroupLens): 943 users x 1682 movies, 100,000 ratings 1-5."""

import numpy as np

from bnmfzoo.datasets._common import fetch, labelled_matrix

N_USERS, N_ITEMS = 943, 1682


def load_movielens_100k(*, data_home=None):
    """Load the MovieLens 100K ratings as a users x movies matrix with NaN for unrated pairs.

    ``u.data`` holds (user id, item id, rating, timestamp) triplets with 1-based contiguous ids;
    a missing (user, item) pair is a missing entry (observed fraction 0.0630). Ratings are
    ordinal integers 1-5. 141 movies have a single rating, so random splits can leave
    all-missing columns. The data may not be redistributed (GroupLens terms); cite Harper &
    Konstan, ACM TiiS 5(4), 2015.

    Parameters
    ----------
    data_home : str or path-like, optional
        Data root holding ``movielens_100k/u.data``; otherwise ``$BNMFZOO_DATA``, then the
        download cache.

    Returns
    -------
    xarray.DataArray
        943 x 1682, dims ``("row", "col")`` = (user id, item id), both 1-based integers.

    Examples
    --------
    >>> from bnmfzoo.datasets import load_movielens_100k
    >>> X = load_movielens_100k()  # doctest: +SKIP
    >>> int(X.notnull().sum())  # doctest: +SKIP
    100000
    """
    (path,) = fetch(["movielens_100k/u.data"], data_home)
    triplets = np.loadtxt(path, delimiter="\t", dtype=np.int64, ndmin=2)
    users, items, ratings = triplets[:, 0] - 1, triplets[:, 1] - 1, triplets[:, 2]
    if users.min() < 0 or users.max() >= N_USERS or items.min() < 0 or items.max() >= N_ITEMS:
        raise ValueError(f"{path} has user/item ids outside 1..{N_USERS} / 1..{N_ITEMS}")
    values = np.full((N_USERS, N_ITEMS), np.nan)
    values[users, items] = ratings
    if np.isfinite(values).sum() != len(triplets):
        raise ValueError(f"{path} has duplicate (user, item) pairs")
    return labelled_matrix(
        values,
        np.arange(1, N_USERS + 1),
        np.arange(1, N_ITEMS + 1),
        name="movielens_100k",
        attrs={
            "title": "MovieLens 100K (users x movies)",
            "description": "Ratings 1-5 (ordinal); NaN = not rated",
            "source": "ThomasBrouwer/BMF_Priors@15b20537 data/movielens/100K/u.data (GroupLens)",
            "citation": "Harper & Konstan, The MovieLens Datasets, ACM TiiS 5(4), 2015",
            "license": "research use only; redistribution not permitted (GroupLens)",
            "data_type": "ordinal",
        },
    )
