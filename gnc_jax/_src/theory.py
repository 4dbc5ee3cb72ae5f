"""Closed forms of Theorem 3.3, the bounds of Theorem 3.9, and the constructions behind them."""

from __future__ import annotations

import math

import numpy as np

from gnc_jax._src.errors import InvalidArgument


def _check_dK(d, K):
    for name, v in (("d", d), ("K", K)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 2:
            raise InvalidArgument(f"{name} must be an integer >= 2, got {v!r}")


def regular_polygon(K: int, alpha: float = 0.0) -> np.ndarray:
    """K equally spaced unit vectors on the circle: the d = 2 softmax code and Tammes code (Theorem 3.3).

    Args:
      K: number of points (>= 2).
      alpha: angle of the first point (radians).

    Returns:
      (2, K) float64 configuration.

    >>> regular_polygon(4).round(12).tolist()
    [[1.0, 0.0, -1.0, -0.0], [0.0, 1.0, 0.0, -1.0]]
    """
    _check_dK(2, K)
    t = alpha + 2 * np.pi * np.arange(K) / K
    return np.stack([np.cos(t), np.sin(t)])


def simplex_etf(d: int, K: int) -> np.ndarray:
    """The simplex ETF sqrt(K/(K-1)) P (I - 11^T/K) in R^d, the softmax code for K <= d + 1
    (Theorem 3.3), built in K coordinates and rotated into R^d through its (K - 1)-dim span.

    Args:
      d: dimension (>= 2).
      K: number of points, 2 <= K <= d + 1.

    Returns:
      (d, K) float64 configuration with Gram matrix (K I - 11^T) / (K - 1).

    >>> W = simplex_etf(3, 4)
    >>> round(float((W.T @ W)[0, 1]), 12)  # -1 / (K - 1)
    -0.333333333333
    """
    _check_dK(d, K)
    if d + 1 < K:
        raise InvalidArgument(f"K must be <= d + 1 = {d + 1} for a simplex ETF, got K={K}")
    M = np.sqrt(K / (K - 1)) * (np.eye(K) - np.ones((K, K)) / K)
    U, _, _ = np.linalg.svd(M)  # columns span the (K-1)-dim centred subspace first
    coords = U[:, : K - 1].T @ M  # (K-1, K), same Gram matrix as M
    W = np.zeros((d, K))
    W[: K - 1] = coords
    return W / np.linalg.norm(W, axis=0)


def cross_polytope(d: int, K: int) -> np.ndarray:
    """The first K vertices of the cross-polytope (e_1, -e_1, e_2, -e_2, ...): a softmax code for
    d + 1 < K <= 2d (Theorem 3.3).

    Args:
      d: dimension (>= 2).
      K: number of points, 2 <= K <= 2d.

    Returns:
      (d, K) float64 configuration.

    >>> cross_polytope(2, 3).tolist()
    [[1.0, -1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    _check_dK(d, K)
    if 2 * d < K:
        raise InvalidArgument(f"K must be <= 2d = {2 * d} for a cross-polytope subset, got K={K}")
    W = np.zeros((d, K))
    for k in range(K):
        W[k // 2, k] = 1.0 if k % 2 == 0 else -1.0
    return W


def softmax_code_closed_form(d: int, K: int) -> tuple[float, np.ndarray] | None:
    """The optimal margin rho* = max_W rho_one-vs-rest(W) of eq. (3) and an optimal W, where
    Theorem 3.3 gives them: K <= d + 1, the simplex ETF, rho* = K / (K - 1); d = 2, the regular
    polygon, rho* = 1 - cos(2 pi / K); d + 1 < K <= 2d, a cross-polytope subset, rho* = 1.

    Args:
      d: dimension (>= 2).
      K: number of classes (>= 2).

    Returns:
      (rho*, W of shape (d, K)), or None where the theorem does not apply.

    >>> softmax_code_closed_form(3, 5)[0], softmax_code_closed_form(3, 7)
    (1.0, None)
    """
    _check_dK(d, K)
    if d + 1 >= K:
        return K / (K - 1), simplex_etf(d, K)
    if d == 2:
        return 1 - math.cos(2 * math.pi / K), regular_polygon(K)
    if 2 * d >= K:
        return 1.0, cross_polytope(d, K)
    return None


_SIN10 = math.sin(math.pi / 18)
# The tribonacci constant, the real root of t^3 = t^2 + t + 1 (Cardano).
_TRIBONACCI = (1 + (19 + 3 * math.sqrt(33)) ** (1 / 3) + (19 - 3 * math.sqrt(33)) ** (1 / 3)) / 3
# The proven optimal max-cosines of :func:`tammes_closed_form` outside its families (its docstring
# names each proof).
_PROVEN_TAMMES = {
    (3, 7): _SIN10 / (1 - _SIN10),
    (3, 8): (2 * math.sqrt(2) - 1) / 7,
    (3, 9): 1 / 3,
    (3, 11): 1 / math.sqrt(5),
    (3, 12): 1 / math.sqrt(5),
    (3, 24): 1 - 2 * (2 - _TRIBONACCI) / (3 - _TRIBONACCI),
    (4, 120): (1 + math.sqrt(5)) / 4,
    (5, 16): 1 / 5,
    (6, 27): 1 / 4,
    (7, 56): 1 / 3,
    (8, 240): 1 / 2,
}


def tammes_closed_form(d: int, K: int) -> float | None:
    """The optimal max-cosine min_W max_{i != j} <w_i, w_j> of the Tammes problem (eq. 11) where a
    proof gives it in closed form: K <= d + 1, -1/(K-1) (simplex); d + 1 < K <= 2d, 0 (Rankin 1955);
    d = 2, cos(2 pi / K); d = 3: K = 7, sin(pi/18) / (1 - sin(pi/18)), K = 8, (2 sqrt 2 - 1) / 7 (the
    square antiprism) and K = 9, 1/3 (Schuette and van der Waerden 1951), K = 11 and 12, 1/sqrt(5)
    (the icosahedron, less a point at K = 11: Fejes Toth 1943, Danzer 1963), K = 24, 1 - 2 (2 - t) /
    (3 - t) with t the tribonacci constant (the snub cube, Robinson 1961); d = 4,
    K = 120, (1 + sqrt 5) / 4 (the 600-cell, Andreev 1999); and the sharp codes that attain
    Levenshtein's bound (Levenshtein 1979, Odlyzko and Sloane 1979): (5, 16), 1/5 (the 5-demicube);
    (6, 27), 1/4 (the Schlaefli configuration); (7, 56), 1/3 (from E7); (8, 240), 1/2 (E8's roots).

    Args:
      d: dimension (>= 2).
      K: number of points (>= 2).

    Returns:
      The optimal max-cosine, or None where no closed form is known.

    >>> tammes_closed_form(3, 6), tammes_closed_form(3, 13)
    (0.0, None)
    """
    _check_dK(d, K)
    if d + 1 >= K:
        return -1.0 / (K - 1)
    if 2 * d >= K:
        return 0.0
    if d == 2:
        return math.cos(2 * math.pi / K)
    return _PROVEN_TAMMES.get((d, K))


def bounds_applicable(d: int, K: int) -> bool:
    """Whether Theorem 3.9's bounds (eq. 13) apply: it assumes K >= sqrt(2 pi sqrt(e) d).

    Args:
      d: dimension (>= 2).
      K: number of classes (>= 2).

    Returns:
      True where :func:`softmax_code_bounds` holds.

    >>> bounds_applicable(3, 6), bounds_applicable(3, 5)  # sqrt(2 pi sqrt(e) 3) = 5.58
    (True, False)
    """
    _check_dK(d, K)
    return math.sqrt(2 * math.pi * math.sqrt(math.e) * d) <= K


def softmax_code_bounds(d: int, K: int) -> tuple[float, float]:
    """Lower and upper bounds on max_W rho_one-vs-rest(W), eq. (13) of Theorem 3.9:
    lower = 1/2 [sqrt(pi)/K Gamma((d+1)/2) / Gamma(d/2 + 1)]^{2/(d-1)},
    upper = 2 [2 sqrt(pi)/K Gamma((d+1)/2) / Gamma(d/2)]^{1/(d-1)}.

    Args:
      d: dimension (>= 2).
      K: number of classes, K >= sqrt(2 pi sqrt(e) d) (:func:`bounds_applicable`).

    Returns:
      (lower, upper).

    >>> lo, hi = softmax_code_bounds(2, 12)  # the polygon's 1 - cos 30 deg lies between
    >>> lo < 1 - math.cos(math.pi / 6) < hi
    True
    """
    _check_dK(d, K)
    lg = math.lgamma
    lower = 0.5 * math.exp(
        (2 / (d - 1)) * (0.5 * math.log(math.pi) - math.log(K) + lg((d + 1) / 2) - lg(d / 2 + 1))
    )
    upper = 2 * math.exp(
        (1 / (d - 1)) * (math.log(2) + 0.5 * math.log(math.pi) - math.log(K) + lg((d + 1) / 2) - lg(d / 2))
    )
    return lower, upper
