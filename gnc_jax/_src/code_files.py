"""Codes as plain NumPy files: ``.npy`` (the (d, K) array) or ``.npz`` (``W`` and, for a solution,
its certified scalars), readable by any framework (``numpy.load``, no pickles)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from gnc_jax._src.errors import InvalidArgument
from gnc_jax._src.geometry import validate_configuration

SUFFIXES = (".npy", ".npz")


def _path(path) -> Path:
    p = Path(path)
    if p.suffix not in SUFFIXES:
        raise InvalidArgument(f"path must end in .npy or .npz, got {str(path)!r}")
    return p


def save_code(path, code) -> Path:
    """Write a code to ``path`` (atomically: an interrupted write leaves no partial file).

    Args:
      path: a ``.npy`` file (the (d, K) float64 array alone) or a ``.npz`` file (array ``W`` and, when
        ``code`` is a solution, one 0-d array per scalar of its ``summary()``).
      code: a (d, K) configuration or a :class:`gnc_jax.Solution`.

    Returns:
      The path written.

    >>> import tempfile, numpy as np
    >>> p = save_code(tempfile.mkdtemp() + "/square.npy", [[1, 0, -1, 0], [0, 1, 0, -1]])
    >>> load_code(p).shape
    (2, 4)
    """
    p = _path(path)
    W = code.W if hasattr(code, "W") else code
    W = validate_configuration(W, "code", unit=False)  # written as given
    scalars = {}
    if hasattr(code, "summary"):
        scalars = {k: np.asarray(v) for k, v in code.summary().items() if np.isscalar(v)}
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, suffix=p.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, W) if p.suffix == ".npy" else np.savez(f, W=W, **scalars)
        os.replace(tmp, p)
    except BaseException:
        os.unlink(tmp)
        raise
    return p


def load_code(path) -> np.ndarray:
    """Read a code written by :func:`save_code` (or any ``.npy`` array, or ``.npz`` with ``W``).

    Args:
      path: the ``.npy`` or ``.npz`` file.

    Returns:
      (d, K) float64 (validated: 2-D, d, K >= 2, finite, no zero column): the saved array bit for bit
      when its columns have unit norm to 1e-12, else its columns normalised (e.g. a float32 code).
    """
    p = _path(path)
    if not p.is_file():
        raise InvalidArgument(f"path {str(path)!r} is not a file")
    try:
        data = np.load(p, allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise InvalidArgument(f"path {str(path)!r} is not a NumPy file: {e}") from None
    if isinstance(data, np.ndarray):
        W = data
    else:
        with data:
            if "W" not in data.files:
                raise InvalidArgument(f"{p} holds no array 'W' (it holds {sorted(data.files)})")
            W = data["W"]
    A = validate_configuration(W, str(p), unit=False)
    norms = np.linalg.norm(A, axis=0)
    return A if np.max(np.abs(norms - 1.0)) <= 1e-12 else A / norms  # unit columns: as saved
