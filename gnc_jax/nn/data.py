"""Offline datasets for the network experiments: scikit-learn's digits and a Gaussian mixture.

Everything is generated or shipped inside an installed package; nothing is downloaded. A
:class:`Dataset` holds float32 inputs and int labels for a train and a test split, fixed by a seed.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from gnc_jax._src.errors import InvalidArgument

DATASETS = ("digits", "gaussian")


class Dataset(NamedTuple):
    """A classification dataset held in memory (generated or shipped with a package; nothing is
    downloaded).

    Attributes:
      name: its name.
      x_train, x_test: inputs, (N, ...) float32.
      y_train, y_test: integer labels in [0, num_classes).
      num_classes: K.
    """

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self.x_train.shape[1:]


def _split(name, x, y, K, test_fraction, rng) -> Dataset:
    train, test = [], []
    for k in range(K):  # stratified: the same fraction of every class goes to the test split
        idx = rng.permutation(np.flatnonzero(y == k))
        n_test = int(round(test_fraction * len(idx)))
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    tr, te = np.concatenate(train), np.concatenate(test)
    return Dataset(name, x[tr], y[tr], x[te], y[te], K)


def digits(classes=None, test_fraction: float = 0.25, seed: int = 0) -> Dataset:
    """scikit-learn's 1797 handwritten digits (8x8 images, 16 grey levels) as (N, 8, 8, 1) in [0, 1].

    Args:
      classes: digits to keep (relabelled 0..len-1 in the given order); default all ten.
      test_fraction: the share held out for testing.
      seed: the split's seed.

    Returns:
      A :class:`Dataset` (shipped with scikit-learn: nothing is downloaded).
    """
    from sklearn.datasets import load_digits

    raw = load_digits()
    x = (raw.images / 16.0).astype(np.float32)[..., None]
    y = raw.target.astype(np.int64)
    if classes is not None:
        classes = list(classes)
        if len(classes) < 2 or len(set(classes)) != len(classes) or not set(classes) <= set(range(10)):
            raise InvalidArgument(f"classes must be at least 2 distinct digits 0..9, got {classes!r}")
        keep = np.isin(y, classes)
        x, y = x[keep], np.array([classes.index(v) for v in y[keep]])
    K = int(y.max()) + 1
    return _split("digits", x, y, K, test_fraction, np.random.default_rng(seed))


def gaussian_mixture(
    K: int,
    dim: int = 32,
    per_class: int = 60,
    separation: float = 5.0,
    test_fraction: float = 0.25,
    seed: int = 0,
) -> Dataset:
    """K Gaussian classes in R^dim: means ``separation`` times random unit vectors, identity noise.

    Args:
      K: number of classes (>= 2; e.g. 100 or 1000).
      dim: input dimension.
      per_class: points per class before the split.
      separation: the norm of the class means.
      test_fraction: the share held out for testing.
      seed: the means', the points' and the split's seed.

    Returns:
      A :class:`Dataset`.
    """
    for name, v, lo in (("K", K, 2), ("dim", dim, 1), ("per_class", per_class, 2)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise InvalidArgument(f"{name} must be an integer >= {lo}, got {v!r}")
    key = jax.random.key(seed)
    k_mu, k_x = jax.random.split(key)
    mu = np.asarray(jax.random.normal(k_mu, (K, dim)))
    mu = separation * mu / np.linalg.norm(mu, axis=1, keepdims=True)
    y = np.repeat(np.arange(K), per_class)
    x = (mu[y] + np.asarray(jax.random.normal(k_x, (K * per_class, dim)))).astype(np.float32)
    return _split("gaussian", x, y, K, test_fraction, np.random.default_rng(seed))


def load(name: str, classes=None, seed: int = 0, **kwargs) -> Dataset:
    """A dataset by name.

    Args:
      name: 'digits' (:func:`digits`) or 'gaussian' (:func:`gaussian_mixture`).
      classes: for digits, K <= 10 (the first K digits) or a list of digits; for gaussian, K
        (default 10).
      seed: the dataset's seed.
      **kwargs: the dataset function's other arguments.

    Returns:
      A :class:`Dataset`.
    """
    if name == "digits":
        if classes is None or isinstance(classes, (list, tuple)):
            return digits(classes, seed=seed, **kwargs)
        if isinstance(classes, bool) or not isinstance(classes, int) or not 2 <= classes <= 10:
            raise InvalidArgument(f"classes must be an integer in 2..10 for digits, got {classes!r}")
        return digits(range(classes), seed=seed, **kwargs)
    if name == "gaussian":
        return gaussian_mixture(10 if classes is None else classes, seed=seed, **kwargs)
    raise InvalidArgument(f"dataset must be one of {list(DATASETS)}, got {name!r}")
