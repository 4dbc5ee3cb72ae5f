"""Exact separation measures of a configuration W in OB(d, K), in float64.

Everything here is a certified recomputation from W itself, never a smoothed loss: pairwise cosines,
the Tammes margin rho_one-vs-one (eq. 11), the one-vs-rest distances and the softmax-code margin
rho_one-vs-rest (eq. 3) via Wolfe's exact QP (:mod:`gnc_jax._src.hull`), rattlers (Definition 3.4) and the
optimal HardMax features of eq. (9). Public functions take W of shape (d, K) and normalise its columns.
Above ``sphere.DENSE_MAX_TERMS`` pairwise entries (K > 16384) W^T W is formed in column blocks and the
QP weights are sparse: nothing of size K x K is held.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse

from gnc_jax._src import hull
from gnc_jax._src.process import float64, one_at_a_time
from gnc_jax._src.sphere import term_block
from gnc_jax._src.errors import InvalidArgument


def validate_configuration(W, name: str = "W", unit: bool = True) -> np.ndarray:
    """Check a user-given configuration and return it as float64 with unit columns (as given if not
    ``unit``).

    Raises:
      ValueError: naming ``name`` if W is not 2-D, has d < 2 or K < 2, holds NaN/inf, or has a zero
        column.
    """
    try:
        A = np.asarray(W, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InvalidArgument(f"{name} must be a real array of shape (d, K): {e}") from None
    if A.ndim != 2:
        raise InvalidArgument(f"{name} must have shape (d, K), got an array of shape {A.shape}")
    d, K = A.shape
    if d < 2 or K < 2:
        raise InvalidArgument(f"{name} must have shape (d, K) with d >= 2 and K >= 2, got {A.shape}")
    if not np.all(np.isfinite(A)):
        raise InvalidArgument(f"{name} contains NaN or inf")
    norms = np.linalg.norm(A, axis=0)
    if np.any(norms == 0):
        raise InvalidArgument(f"{name} has zero columns {np.flatnonzero(norms == 0).tolist()}")
    return A / norms if unit else A


def cosines(W) -> np.ndarray:
    """Pairwise cosines W^T W (K, K) of the normalised columns."""
    A = validate_configuration(W)
    return A.T @ A


def pair_mask(col_mask):
    """(K, K) mask of distinct pairs of real columns (numpy for a numpy mask)."""
    xp = np if isinstance(col_mask, np.ndarray) else jnp
    return col_mask[:, None] & col_mask[None, :] & ~xp.eye(col_mask.shape[0], dtype=bool)


def max_cos_masked(W, col_mask):
    """max_{i != j} <w_i, w_j> over real columns."""
    return jnp.max(jnp.where(pair_mask(col_mask), W.T @ W, -jnp.inf))


def nearest_chords_masked(W, col_mask):
    """For each real column, the chord ||w_i - w_j|| to its nearest neighbour j (largest cosine),
    computed from the difference vector, which stays accurate for small angles; +inf off-mask."""
    cos = jnp.where(pair_mask(col_mask), W.T @ W, -jnp.inf)
    nearest = jnp.argmax(cos, axis=1)
    chord = jnp.linalg.norm(W - W[:, nearest], axis=0)
    return jnp.where(col_mask, chord, jnp.inf)


class Separation(NamedTuple):
    """The certified separation of one configuration (all float64), from :func:`separation`.

    Attributes:
      min_angle_deg: minimum pairwise angle in degrees, 2 asin(chord / 2).
      max_cos: maximum pairwise cosine.
      rho_one_vs_one: the Tammes margin of eq. (11), the minimum chord.
      nearest_chords: (K,) chord from each point to its nearest neighbour.
      distances: (K,) one-vs-rest distances dist(w_k, conv{w_j : j != k}) (upper bounds).
      rho_one_vs_rest: the softmax-code margin of eq. (3) (an upper bound; exact where the gap is ~0).
      weights: (K, K) optimal convex weights; row k projects w_k onto the hull of the rest (a
        ``scipy.sparse.csr_array`` above ``SCREEN_MIN_K`` columns).
      certificate_gap: the largest Frank-Wolfe gap of the K QPs (squared-distance units).
      lower_bounds: (K,) certified lower bounds on the distances.
      rho_lower: certified lower bound: rho_one_vs_rest lies in [rho_lower, rho_one_vs_rest].
    """

    min_angle_deg: jax.Array
    max_cos: jax.Array
    rho_one_vs_one: jax.Array
    nearest_chords: jax.Array
    distances: jax.Array
    rho_one_vs_rest: jax.Array
    weights: jax.Array
    certificate_gap: jax.Array
    lower_bounds: jax.Array
    rho_lower: jax.Array


def _wolfe_lower_bounds(x, gap):
    """Lower bounds max(0, min_j <x, p_j>) / ||x|| = max(0, ||x||^2 - gap) / ||x|| (hull docstring)."""
    norm = jnp.linalg.norm(x, axis=1)
    return jnp.where(
        norm > 0, jnp.maximum(jnp.sum(x * x, axis=1) - gap, 0.0) / jnp.where(norm > 0, norm, 1), 0.0
    )


def separation_masked(W, col_mask) -> Separation:
    """All certified measures of a (possibly padded) configuration; jit/vmap friendly."""
    mnp = hull.one_vs_rest(W, col_mask)
    nearest = nearest_chords_masked(W, col_mask)
    rho11 = jnp.min(nearest)
    dist = jnp.where(col_mask, jnp.linalg.norm(mnp.x, axis=1), jnp.inf)
    lower = jnp.where(col_mask, _wolfe_lower_bounds(mnp.x, mnp.gap), jnp.inf)
    return Separation(
        min_angle_deg=jnp.degrees(2 * jnp.arcsin(jnp.minimum(rho11 / 2, 1.0))),
        max_cos=max_cos_masked(W, col_mask),
        rho_one_vs_one=rho11,
        nearest_chords=nearest,
        distances=dist,
        rho_one_vs_rest=jnp.min(dist),
        weights=mnp.weights,
        certificate_gap=jnp.max(jnp.where(col_mask & jnp.isfinite(dist), mnp.gap, -jnp.inf)),
        lower_bounds=lower,
        rho_lower=jnp.min(lower),
    )


_separation = one_at_a_time(jax.jit(separation_masked))

SCREEN_MIN_K = 512  # above this many columns the QPs run on screened candidates (hull, column generation)
# Above this K d^2 (and K), only the classes nearest the margin get a QP: an exact QP's cost grows
# about like d^2 on optimised codes (measurements: docs/decisions.md, "The annealer's work limit").
EXACT_MAX_WORK = 3e5
BOUNDED_CLASSES = 8  # how many: those with the smallest lower bounds


@functools.partial(jax.jit, static_argnames="block")
def _column_max(W, H, block: int):
    """max_{j != k} <w_j, h_k> and its argmax j for every column h_k of H, from W^T H formed
    ``block`` columns at a time (memory K x block)."""
    K = W.shape[1]
    n = -(-K // block)
    cols = jnp.arange(n * block).reshape(n, block)
    H = jnp.pad(H, ((0, 0), (0, n * block - K)))

    def one(ks):
        S = jnp.where(jnp.arange(K)[:, None] == ks[None, :], -jnp.inf, W.T @ H[:, ks])
        return jnp.max(S, axis=0), jnp.argmax(S, axis=0)

    best, arg = jax.lax.map(one, cols)
    return best.reshape(-1)[:K], arg.reshape(-1)[:K]


def _block(K: int) -> int:
    return term_block(1, K, K) or K


def _nearest(A: np.ndarray):
    """(max_{j != k} <w_j, w_k>, the chord to that nearest neighbour) for every column of unit A,
    from W^T W in column blocks (:func:`_column_max`)."""
    W = jnp.asarray(A)
    best, arg = jax.device_get(_column_max(W, W, _block(A.shape[1])))
    return best, np.linalg.norm(A - A[:, arg], axis=0)


def feature_lower_bounds(W, H):
    """min_{j != k} <w_k - w_j, h_k> for unit features h_k (columns of H, (d, K)): by the duality
    of eq. (3) (see :mod:`gnc_jax._src.objectives`), a certified lower bound on dist_k for any H.
    W^T H is formed in column blocks above ``sphere.DENSE_MAX_TERMS`` entries."""
    best, _ = _column_max(W, H, _block(W.shape[1]))
    return jnp.sum(W * H, axis=0) - best


@float64
def separation(W, directions=None) -> Separation:
    """Every certified separation measure of W (d, K) at once, in float64: the Tammes measures of
    eq. (11) and the one-vs-rest distances and margin of eq. (3) by exact QPs, with the Frank-Wolfe
    gap that certifies them (:class:`Separation`).

    Args:
      W: (d, K) configuration; columns are normalised to the sphere.
      directions: (d, K) first guesses of eq. (9) for large K (e.g. HardMax features), or None.

    Returns:
      A :class:`Separation`.

    >>> import numpy as np
    >>> sep = separation(np.eye(3))
    >>> round(float(sep.min_angle_deg), 9), round(float(sep.rho_one_vs_rest), 9)
    (90.0, 1.224744871)

    How it scales:

    * K <= ``SCREEN_MIN_K``: all K QPs exactly (vmapped Wolfe).
    * larger K: the QPs run by column generation over candidate points
      (:func:`gnc_jax._src.hull.one_vs_rest_screened`); ``directions`` (d, K), e.g. the features of a
      HardMax solution, are its first guess of eq. (9). Same certificate: the Frank-Wolfe gap over
      all K points. ``weights`` is then a ``scipy.sparse.csr_array`` (each row holds at most d + 1
      points), and the nearest neighbours come from W^T W formed in column blocks above
      ``sphere.DENSE_MAX_TERMS`` entries: nothing of size K x K is held.
    * larger K and K d^2 > ``EXACT_MAX_WORK``: optimised codes have supports of nearly d + 1
      points there (460 of 513 at d = 512), and an exact QP costs up to seconds per class. Every
      class then gets the larger of the lower bounds :func:`feature_lower_bounds` of W itself
      (1 - max_j <w_j, w_k>) and of ``directions``, and only the ``BOUNDED_CLASSES`` with the
      smallest bounds get a QP: rho_one-vs-rest is certified to lie in [rho_lower,
      rho_one_vs_rest]; ``distances`` is +inf and ``weights`` an empty row for the classes without
      a QP.
    """
    A = validate_configuration(W)
    d, K = A.shape
    if K <= SCREEN_MIN_K:
        return _separation(jnp.asarray(A), jnp.ones(K, bool))
    dirs = A
    if directions is not None:
        dirs = validate_configuration(directions, "directions")
        if dirs.shape != A.shape:
            raise InvalidArgument(f"directions must have the shape of W {A.shape}, got {dirs.shape}")
    near_cos, chords = _nearest(A)
    if K * d * d <= EXACT_MAX_WORK:
        mnp = hull.one_vs_rest_screened(A, dirs)
        x, gap, weights = np.asarray(mnp.x), np.asarray(mnp.gap), mnp.weights
        lower = np.asarray(_wolfe_lower_bounds(x, gap))
        dist = np.linalg.norm(x, axis=1)
    else:
        lower = np.sum(A * A, axis=0) - near_cos
        if directions is not None:  # both bound every class: features that fit another W cannot hurt
            lower = np.maximum(lower, np.asarray(feature_lower_bounds(jnp.asarray(A), jnp.asarray(dirs))))
        classes = np.argsort(lower)[:BOUNDED_CLASSES]
        sub = hull.one_vs_rest_screened(A, dirs, classes, candidates=2 * (d + 1), max_rounds=3)
        x, gap = np.asarray(sub.x), np.asarray(sub.gap)
        lower[classes] = np.maximum(lower[classes], _wolfe_lower_bounds(x, gap))
        dist = np.full(K, np.inf)
        dist[classes] = np.linalg.norm(x, axis=1)
        coo = sub.weights.tocoo()
        weights = scipy.sparse.csr_array((coo.data, (classes[coo.row], coo.col)), shape=(K, K))
    rho11 = chords.min()
    return Separation(
        min_angle_deg=np.degrees(2 * np.arcsin(min(rho11 / 2, 1.0))),
        max_cos=near_cos.max(),
        rho_one_vs_one=rho11,
        nearest_chords=chords,
        distances=dist,
        rho_one_vs_rest=dist.min(),
        weights=weights,
        certificate_gap=gap.max(),
        lower_bounds=lower,
        rho_lower=lower.min(),
    )


def one_vs_rest_distances(W) -> np.ndarray:
    """The one-vs-rest distances dist(w_k, conv{w_j : j != k}) of eq. (3), by exact QPs (Wolfe's
    algorithm with a Frank-Wolfe certificate), one for every class even where :func:`separation`
    only brackets the margin (K QPs: at large d and K this takes long).

    Args:
      W: (d, K) configuration; columns are normalised to the sphere.

    Returns:
      (K,) float64 distances.

    >>> import numpy as np
    >>> W = np.array([[1.0, 0.0, -1.0, 0.0], [0.0, 1.0, 0.0, -1.0]])  # the square
    >>> np.round(one_vs_rest_distances(W), 12).tolist()  # each vertex to the opposite triangle
    [1.0, 1.0, 1.0, 1.0]
    """
    return _all_projections(W)[1]


@float64
def _all_projections(W):
    """(W as validated, the distances, the convex weights), from a QP for every class."""
    A = validate_configuration(W)
    if A.shape[1] <= SCREEN_MIN_K:
        sep = _separation(jnp.asarray(A), jnp.ones(A.shape[1], bool))
        return A, np.asarray(sep.distances), np.asarray(sep.weights)
    mnp = hull.one_vs_rest_screened(A)
    return A, np.linalg.norm(np.asarray(mnp.x), axis=1), mnp.weights


def softmax_code_margin(W) -> float:
    """The softmax-code margin rho_one-vs-rest(W) = min_k dist(w_k, conv{w_j : j != k}), eq. (3),
    which softmax codes maximise (Definition 2.1).

    Args:
      W: (d, K) configuration; columns are normalised to the sphere.

    Returns:
      The margin (float64), certified by exact QPs (:func:`separation`). Where :func:`separation`
      runs QPs for a few classes only (K > 512 and K d^2 > ``EXACT_MAX_WORK``), this is the upper
      end of its certified bracket; ``separation(W).rho_lower`` is the lower end.

    >>> import numpy as np
    >>> W = np.array([[1.0, -0.5, -0.5], [0.0, 3**0.5 / 2, -3**0.5 / 2]])  # the simplex, K = 3
    >>> round(softmax_code_margin(W), 12)  # Theorem 3.3: K / (K - 1) at the simplex
    1.5
    """
    return float(separation(W).rho_one_vs_rest)


@float64
def tammes_margin(W) -> float:
    """The Tammes margin rho_one-vs-one(W) = min_{k != k'} ||w_k - w_k'||, eq. (11): the minimum
    chord, which Tammes codes maximise.

    Args:
      W: (d, K) configuration; columns are normalised to the sphere.

    Returns:
      The minimum chord (float64).

    >>> import numpy as np
    >>> W = np.array([[1.0, 0.0, -1.0, 0.0], [0.0, 1.0, 0.0, -1.0]])
    >>> round(tammes_margin(W) ** 2, 12)  # the square's side
    2.0
    """
    return float(_nearest(validate_configuration(W))[1].min())


def min_angle_deg(W) -> float:
    """The minimum pairwise angle in degrees, 2 asin(rho_one-vs-one / 2) from the minimum chord of
    eq. (11) (accurate near 0 and 180 degrees, unlike arccos of the cosine).

    Args:
      W: (d, K) configuration; columns are normalised to the sphere.

    Returns:
      The angle in degrees (float64).

    >>> import numpy as np
    >>> round(min_angle_deg(np.eye(3)), 9)  # three orthogonal vectors
    90.0
    """
    return float(np.degrees(2 * np.arcsin(min(tammes_margin(W) / 2, 1.0))))


@float64
def max_cos(W) -> float:
    """The largest pairwise cosine max_{i != j} <w_i, w_j>, which Tammes codes minimise (eq. 11).

    Args:
      W: (d, K) configuration; columns are normalised to the sphere.

    Returns:
      The cosine (float64).

    >>> import numpy as np
    >>> W = np.array([[1.0, -0.5, -0.5], [0.0, 3**0.5 / 2, -3**0.5 / 2]])
    >>> round(max_cos(W), 12)
    -0.5
    """
    return float(_nearest(validate_configuration(W))[0].max())


def _check_tol(tol):
    if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol >= 0):
        raise InvalidArgument(f"tol must be a finite number >= 0, got {tol!r}")


def above_minimum(values, tol: float) -> np.ndarray:
    """Indices whose value exceeds the minimum by more than ``tol``: the rattlers, given the
    one-vs-rest distances (Definition 3.4) or the nearest-neighbour chords (Tammes)."""
    _check_tol(tol)
    values = np.asarray(values)
    return np.flatnonzero(values > values.min() + tol)


@float64
def rattlers(W, tol: float = 1e-6, problem: str = "softmax-code") -> np.ndarray:
    """The rattlers of W, as indices: for a softmax code (Definition 3.4, eq. 8) the classes whose
    one-vs-rest distance exceeds rho_one-vs-rest by more than ``tol``; for a Tammes code
    (``problem='tammes'``) the points whose nearest neighbour is farther than the minimum chord by
    more than ``tol``.

    Args:
      W: (d, K) configuration; columns are normalised to the sphere.
      tol: the margin a point's own value must exceed the minimum by.
      problem: 'softmax-code' or 'tammes'.

    Returns:
      The rattlers' indices (sorted).

    >>> import numpy as np
    >>> W = np.array([[1.0, 0.0, -1.0, 0.0], [0.0, 1.0, 0.0, -1.0]])  # the square: no rattler
    >>> rattlers(W, problem="tammes").tolist(), rattlers(W).tolist()
    ([], [])
    """
    _check_tol(tol)
    if problem == "softmax-code":
        return above_minimum(one_vs_rest_distances(W), tol)
    if problem == "tammes":
        return above_minimum(_nearest(validate_configuration(W))[1], tol)
    raise InvalidArgument(f"problem must be 'softmax-code' or 'tammes', got {problem!r}")


def features_from_weights(W: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Eq. (9) from the QP's convex weights: the normalised residuals w_k - W v_k (NaN where the
    residual is zero, i.e. w_k lies in the hull of the rest)."""
    residual = W - (weights @ W.T).T  # weights dense or scipy.sparse
    norms = np.linalg.norm(residual, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, residual / norms, np.nan)


def optimal_features(W) -> np.ndarray:
    """The HardMax-optimal class features of eq. (9): h_k = P_S(w_k - P_{conv{w_j : j != k}}(w_k)),
    the normalised residual of the projection onto the hull of the rest.

    Args:
      W: (d, K) configuration; columns are normalised to the sphere.

    Returns:
      (d, K) float64 features; a column is NaN where w_k lies in the hull of the rest (distance 0,
      no defined feature).

    >>> import numpy as np
    >>> W = np.array([[1.0, -0.5, -0.5], [0.0, 3**0.5 / 2, -3**0.5 / 2]])
    >>> np.allclose(optimal_features(W), W)  # at the simplex each feature is its class's w_k
    True
    """
    A, _, weights = _all_projections(W)
    return features_from_weights(A, weights)


def distances_envelope(W, weights) -> jax.Array:
    """One-vs-rest distances as a differentiable function of W with the QP weights fixed (envelope
    theorem): ``jax.grad`` of this at the optimal weights is the gradient of dist_k."""
    return hull.distances_from_weights(W, jax.lax.stop_gradient(weights))
