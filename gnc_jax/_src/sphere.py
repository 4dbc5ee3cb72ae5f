"""Primitives on the oblique manifold OB(d, K) = {W in R^{d x K} : ||w_k|| = 1}.

W has shape (d, K); column k is w_k. Batched (padded) configurations carry a column mask (K,)
marking real columns; padded dimensions are rows of zeros and stay zero under every map here.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def normalize_columns(W: jax.Array) -> jax.Array:
    """Project each column onto the unit sphere (the retraction of OB(d, K)).

    W has shape (..., d, K): a stack of configurations normalises each of its own columns."""
    return W / jnp.linalg.norm(W, axis=-2, keepdims=True)


def random_points(key: jax.Array, d: int, K: int, dtype=jnp.float64) -> jax.Array:
    """K points uniform on S^{d-1} (normalised Gaussians), shape (d, K)."""
    return normalize_columns(jax.random.normal(key, (d, K), dtype=dtype))


def tangent_project(W: jax.Array, G: jax.Array) -> jax.Array:
    """Project an ambient direction G onto the tangent space of OB(d, K) at W, column by column
    (shapes (..., d, K), as in ``normalize_columns``)."""
    return G - W * jnp.sum(W * G, axis=-2, keepdims=True)


def tangent_bases(W):
    """(K, d, d - 1): an orthonormal basis of the tangent space at each column of W.

    The Householder reflection H = I - 2 v v^T / |v|^2 with v = w + sign(w_1) e_1 maps e_1 to
    -sign(w_1) w, so its other d - 1 columns are an orthonormal basis of w's complement. Computed
    by numpy for a numpy W (the host polish), by jax.numpy otherwise (inside compiled code)."""
    xp = np if isinstance(W, np.ndarray) else jnp
    d = W.shape[0]
    eye = xp.eye(d, dtype=W.dtype)
    v = W.T + xp.where(W[0] >= 0, 1.0, -1.0)[:, None] * eye[0]
    H = eye - 2.0 * v[:, :, None] * v[:, None, :] / xp.sum(v * v, axis=1)[:, None, None]
    return H[:, :, 1:]


def padded_points(key: jax.Array, d: int, K: int, d_max: int, K_max: int, dtype=jnp.float64):
    """Random points of OB(d, K) embedded in a (d_max, K_max) array.

    Real entries live in rows < d and columns < K. Padded columns are the unit vector e_1 (so that
    normalisation is well defined); they must be masked out of every objective. ``d`` and ``K`` may
    be traced values, so the same compiled code serves every pair in a bucket.
    """
    row_mask = jnp.arange(d_max) < d
    col_mask = jnp.arange(K_max) < K
    X = jax.random.normal(key, (d_max, K_max), dtype=dtype) * row_mask[:, None]
    e1 = jnp.zeros((d_max, 1), dtype).at[0, 0].set(1.0)
    X = jnp.where(col_mask[None, :], X, e1)
    return normalize_columns(X), row_mask, col_mask


# The most pairwise terms formed at once (restarts x K x columns): 2^28 terms are 2 GiB in float64.
# Above it the annealer's terms (``Problem.value_and_grad_blocks``) and the certification's cosines
# (``geometry.separation``) go in column blocks; every pair up to K = 10^4 with one restart stays dense.
DENSE_MAX_TERMS = 2**28
MIN_BLOCK = 128


def term_block(restarts: int, K: int, columns: int) -> int:
    """0 (form all terms at once) when restarts x K x columns <= ``DENSE_MAX_TERMS``, else the
    column block width: the largest power of two that keeps a block's terms within the limit (at
    least ``MIN_BLOCK``).

    >>> term_block(1, 10_240, 10_240), term_block(1, 100_000, 100_000)
    (0, 2048)
    """
    if restarts * K * columns <= DENSE_MAX_TERMS:
        return 0
    width = max(DENSE_MAX_TERMS // (restarts * K), MIN_BLOCK)
    return min(1 << (width.bit_length() - 1), columns)
