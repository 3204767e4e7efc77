"""ORL / AT&T "Database of Faces" (40 subjects x 10 images, 112 x 92 grey levels)."""

import numpy as np

from bnmfzoo._base.validation import fmt
from bnmfzoo.datasets._common import fetch, labelled_matrix

N_SUBJECTS = 40
N_IMAGES = 10
HEIGHT, WIDTH = 112, 92


def face_files():
    """Relative paths of the 400 PGM files, ordered s1/1 ... s1/10, s2/1, ..., s40/10."""
    return [
        f"faces_orl/s{s}/{i}.pgm" for s in range(1, N_SUBJECTS + 1) for i in range(1, N_IMAGES + 1)
    ]


def read_pgm(path):
    """Read a binary (``P5``) 8-bit PGM image into a ``(height, width)`` uint8 array.

    Parameters
    ----------
    path : path-like
        The file.

    Returns
    -------
    numpy.ndarray
    """
    with open(path, "rb") as fh:
        data = fh.read()
    fields, pos = [], 0
    while len(fields) < 4:
        while pos < len(data) and data[pos : pos + 1].isspace():
            pos += 1
        if data[pos : pos + 1] == b"#":  # comment to end of line
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while end < len(data) and not data[end : end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    magic, width, height, maxval = fields[0], int(fields[1]), int(fields[2]), int(fields[3])
    if magic != b"P5" or maxval > 255:
        raise ValueError(f"{path} is not an 8-bit binary PGM (magic {magic!r}, maxval {maxval})")
    pixels = np.frombuffer(data, dtype=np.uint8, count=width * height, offset=pos + 1)
    return pixels.reshape(height, width)


def _resize(image, size):
    from PIL import Image

    out = Image.fromarray(image).resize((size[1], size[0]), resample=Image.Resampling.BOX)
    return np.asarray(out, dtype=np.uint8)


def load_faces(size=None, *, scale=True, data_home=None, progressbar=False):
    """Load the ORL / AT&T faces as a pixels x faces matrix.

    Each column is one image flattened in row-major (C) order; ``X[:, j].values.reshape(
    X.attrs["image_shape"])`` gives it back. ``size=None`` keeps the original 112 x 92 images
    (10304 x 400). ``size=(64, 64)`` gives the 4096 x 400 "Olivetti faces" matrix of Masood &
    Doshi-Velez (2019): each image is resized (stretched, no crop) with PIL's ``BOX`` filter,
    i.e. each output pixel is the area-weighted mean of the input pixels it covers, then rounded
    to 8 bits. (scikit-learn's Olivetti copy was made differently and is not bit-identical.)

    Parameters
    ----------
    size : tuple of int (height, width), optional
        Output image size; ``None`` keeps 112 x 92.
    scale : bool, default True
        Divide by 255 so pixels lie in [0, 1] (as scikit-learn's Olivetti faces); False keeps
        the grey levels 0-255.
    data_home : str or path-like, optional
        Data root holding ``faces_orl/s1 ... s40/1..10.pgm``; otherwise ``$BNMFZOO_DATA``,
        then the download cache (400 files).
    progressbar : bool, default False
        Show a progress bar while locating / downloading the files.

    Returns
    -------
    xarray.DataArray
        Dims ``("row", "col")`` = (pixel index, face id ``"s<subject>/<image>"``), with a
        ``subject`` coordinate (1-40) on ``col`` and ``attrs["image_shape"]`` = (height, width).

    Examples
    --------
    >>> from bnmfzoo.datasets import load_faces
    >>> X = load_faces((64, 64))  # doctest: +SKIP
    >>> X.shape  # doctest: +SKIP
    (4096, 400)
    """
    if size is not None:
        try:
            size = tuple(int(s) for s in size)
        except TypeError as err:
            raise TypeError(f"size must be None or (height, width), got {fmt(size)}") from err
        if len(size) != 2 or min(size) < 1:
            raise ValueError(f"size must be None or (height, width) >= 1, got {fmt(size)}")
    rels = face_files()
    paths = fetch(rels, data_home, progressbar=progressbar)
    images = []
    for path in paths:
        img = read_pgm(path)
        if img.shape != (HEIGHT, WIDTH):
            raise ValueError(f"{path} is {img.shape}, expected {(HEIGHT, WIDTH)}")
        images.append(img if size is None or size == img.shape else _resize(img, size))
    shape = images[0].shape
    values = np.stack([im.reshape(-1) for im in images], axis=1).astype(float)
    if scale:
        values /= 255.0
    ids = [rel[len("faces_orl/") : -len(".pgm")] for rel in rels]
    return labelled_matrix(
        values,
        np.arange(values.shape[0]),
        ids,
        name="faces",
        attrs={
            "title": f"ORL / AT&T faces ({shape[0]}x{shape[1]} pixels x 400 faces)",
            "description": (
                "Grey levels "
                + ("/ 255 in [0, 1]" if scale else "0-255")
                + ("" if size is None else "; resized from 112x92 with PIL BOX (area) filter")
            ),
            "source": "hakawa-bernardi/orl-face-recognition-pca-svm@6877178 orl_faces/",
            "citation": (
                "Samaria & Harter, Parameterisation of a stochastic model for human face "
                "identification, 1994 (AT&T Laboratories Cambridge)"
            ),
            "data_type": "image",
            "image_shape": list(shape),
        },
        col_coords={"subject": [int(i.split("/")[0][1:]) for i in ids]},
    )
