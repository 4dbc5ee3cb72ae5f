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
    """K equally spaced unit vectors on the circle, shape (2, K): the d = 2 softmax code."""
    _check_dK(2, K)
    t = alpha + 2 * np.pi * np.arange(K) / K
    return np.stack([np.cos(t), np.sin(t)])


def simplex_etf(d: int, K: int) -> np.ndarray:
    """Simplex ETF sqrt(K/(K-1)) P (I - 11^T/K) in R^d, K <= d + 1, shape (d, K) (Theorem 3.3).

    Built in the K-dimensional coordinates and rotated into R^d through the orthonormal basis of the
    centred simplex (its span has dimension K - 1 <= d).
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
    """The first K vertices of the cross-polytope (e_1, -e_1, e_2, -e_2, ...), K <= 2d."""
    _check_dK(d, K)
    if 2 * d < K:
        raise InvalidArgument(f"K must be <= 2d = {2 * d} for a cross-polytope subset, got K={K}")
    W = np.zeros((d, K))
    for k in range(K):
        W[k // 2, k] = 1.0 if k % 2 == 0 else -1.0
    return W


def softmax_code_closed_form(d: int, K: int) -> tuple[float, np.ndarray] | None:
    """rho_one-vs-rest of the softmax code and an optimal W where Theorem 3.3 gives them, else None.

    d = 2: regular polygon, rho = 1 - cos(2 pi / K); K <= d + 1: simplex ETF, rho = K / (K - 1);
    d + 1 < K <= 2d: cross-polytope subset, rho = 1.
    """
    _check_dK(d, K)
    if d + 1 >= K:
        return K / (K - 1), simplex_etf(d, K)
    if d == 2:
        return 1 - math.cos(2 * math.pi / K), regular_polygon(K)
    if 2 * d >= K:
        return 1.0, cross_polytope(d, K)
    return None


def tammes_closed_form(d: int, K: int) -> float | None:
    """Optimal max-cosine of the Tammes problem where a proof gives it in closed form, else None:
    K <= d + 1: -1/(K-1) (simplex); d + 1 < K <= 2d: 0 (Rankin 1955); d = 2: cos(2 pi / K);
    d = 3, K = 12: 1/sqrt(5) (the icosahedron, Fejes Toth 1943); d = 8, K = 240: 1/2 (the E8 root
    system attains Levenshtein's bound, Levenshtein 1979, Odlyzko and Sloane 1979)."""
    _check_dK(d, K)
    if d + 1 >= K:
        return -1.0 / (K - 1)
    if 2 * d >= K:
        return 0.0
    if d == 2:
        return math.cos(2 * math.pi / K)
    return {(3, 12): 1 / math.sqrt(5), (8, 240): 0.5}.get((d, K))


def bounds_applicable(d: int, K: int) -> bool:
    """Theorem 3.9 assumes K >= sqrt(2 pi sqrt(e) d)."""
    _check_dK(d, K)
    return math.sqrt(2 * math.pi * math.sqrt(math.e) * d) <= K


def softmax_code_bounds(d: int, K: int) -> tuple[float, float]:
    """Lower and upper bounds on max_W rho_one-vs-rest(W), eq. (13) of Theorem 3.9.

    lower = 1/2 [sqrt(pi)/K Gamma((d+1)/2) / Gamma(d/2 + 1)]^{2/(d-1)},
    upper = 2 [2 sqrt(pi)/K Gamma((d+1)/2) / Gamma(d/2)]^{1/(d-1)}.
    Valid when K >= sqrt(2 pi sqrt(e) d) (see :func:`bounds_applicable`).
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
