"""Independent references for codes with K >> d: explicit codes from the literature and the linear
programming bound that limits every code.

These are yardsticks for the solvers, never their starting points:

- :func:`kerdock_code`: d / 2 + 1 real mutually unbiased bases of R^d and their negatives, d (d + 2)
  unit vectors with max cos 1/sqrt(d) (Cameron and Seidel 1973; Calderbank, Cameron, Kantor and
  Seidel 1997), for d = 4, 16, 64. In d = 4 it is the 24-cell.
- :func:`delsarte_bound` and :func:`max_cos_lower_bound`: the Delsarte linear programming bound on
  the size of a code with max cos s (Delsarte, Goethals and Seidel 1977), whose optimum over
  polynomials of degree <= tau(s) is Levenshtein's bound (Levenshtein 1979); a higher degree can only
  tighten it. It gives the smallest max cos, hence the largest Tammes angle, any K points in R^d
  can have.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import special
from scipy.optimize import linprog

from gnc_jax._src.errors import InvalidArgument

# Irreducible polynomials of GF(2^m) (bit i: the coefficient of x^i), and per m the alternating form
# B_1 on GF(2^m) + GF(2) (its entries above the diagonal as bits, row by row) whose orbit under the
# multiplications by nonzero field elements is, with 0, a Kerdock set: found by a search over all
# 2^(m (m + 1) / 2) forms; :func:`mutually_unbiased_bases` checks the property on every build.
_FIELD_POLYNOMIALS = {1: 0b11, 3: 0b1011, 5: 0b100101}
_KERDOCK_SEEDS = {1: 1, 3: 12, 5: 693}


def _gf_mul(a: int, b: int, m: int) -> int:
    product = 0
    while b:
        if b & 1:
            product ^= a
        b >>= 1
        a <<= 1
        if a >> m & 1:
            a ^= _FIELD_POLYNOMIALS[m]
    return product


def _kerdock_forms(m: int) -> list[np.ndarray]:
    """2^m alternating forms on GF(2)^(m+1) = GF(2^m) + GF(2) whose pairwise sums are nonsingular (a
    Kerdock set): 0 and M_c^T B_1 M_c for the multiplications M_c by the nonzero c in GF(2^m)."""
    n = m + 1
    B1 = np.zeros((n, n), np.int64)
    for bit, (i, j) in enumerate(itertools.combinations(range(n), 2)):
        B1[i, j] = B1[j, i] = _KERDOCK_SEEDS[m] >> bit & 1
    forms = [np.zeros((n, n), np.int64)]
    for c in range(1, 2**m):
        M = np.eye(n, dtype=np.int64)
        for j in range(m):
            image = _gf_mul(c, 1 << j, m)
            M[:m, j] = [image >> i & 1 for i in range(m)]
        forms.append(M.T @ B1 @ M % 2)
    return forms


def _rank_gf2(M: np.ndarray) -> int:
    M, rank = M.copy() % 2, 0
    for col in range(M.shape[1]):
        rows = np.flatnonzero(M[rank:, col]) + rank
        if rows.size == 0:
            continue
        M[[rank, rows[0]]] = M[[rows[0], rank]]
        others = np.flatnonzero(M[:, col])
        M[others[others != rank]] ^= M[rank]
        rank += 1
    return rank


def mutually_unbiased_bases(d: int) -> list[np.ndarray]:
    """d / 2 + 1 real mutually unbiased bases of R^d: the standard basis and, for each quadratic form
    Q_s of a Kerdock set, the vectors x -> (-1)^(Q_s(x) + b.x) / sqrt(d) over b in GF(2)^n, d = 2^n.
    Two bases are unbiased since Q_s + Q_t is bent (its alternating form is nonsingular).

    Args:
      d: 4, 16 or 64 (the Kerdock sets over GF(2), GF(8) and GF(32) built here).

    Returns:
      d / 2 + 1 orthogonal (d, d) matrices, every entry of a product of two of them 1/sqrt(d) in
      absolute value.

    >>> bases = mutually_unbiased_bases(4)
    >>> len(bases), float(abs(bases[1].T @ bases[2]).max())
    (3, 0.5)
    """
    m = {4: 1, 16: 3, 64: 5}.get(d) if isinstance(d, (int, np.integer)) and not isinstance(d, bool) else None
    if m is None:
        raise InvalidArgument(f"d must be 4, 16 or 64 for the Kerdock construction, got {d!r}")
    forms = _kerdock_forms(m)
    if any(_rank_gf2(B ^ C) < m + 1 for B, C in itertools.combinations(forms, 2)):  # its definition
        raise RuntimeError(f"the forms over GF(2^{m}) are not a Kerdock set")
    points = np.array(list(itertools.product((0, 1), repeat=m + 1)))  # x in GF(2)^(m+1)
    bases = [np.eye(d)]
    for B in forms:
        quadratic = np.einsum("xi,ij,xj->x", points, np.triu(B, 1), points)  # Q with polarization B
        signs = (quadratic[:, None] + points @ points.T) % 2  # (x, b) -> Q(x) + b.x
        bases.append((1 - 2 * signs) / math.sqrt(d))
    return bases


def kerdock_code(d: int) -> np.ndarray:
    """The Kerdock code: the d / 2 + 1 mutually unbiased bases of R^d and their negatives, d (d + 2)
    unit vectors whose largest inner product between distinct points is 1/sqrt(d) (the Tammes angle
    arccos(1/sqrt(d))). In d = 4 it is the 24-cell.

    Args:
      d: 4, 16 or 64 (:func:`mutually_unbiased_bases`).

    Returns:
      (d, d (d + 2)) float64 configuration, basis by basis, each vector followed by its negative.

    >>> import numpy as np
    >>> W = kerdock_code(4)
    >>> G = W.T @ W - 2 * np.eye(24)
    >>> W.shape, float(G.max())  # the 24-cell: 60 degrees
    ((4, 24), 0.5)
    """
    bases = mutually_unbiased_bases(d)
    return np.concatenate([np.stack([v, -v], axis=1) for B in bases for v in B.T], axis=1)


def gegenbauer(d: int, k: int, t) -> np.ndarray:
    """The Gegenbauer polynomial of degree k for the sphere S^(d-1), normalised to 1 at t = 1: the
    zonal harmonics whose sums over a code's Gram matrix are >= 0 (the positivity behind the bound).

    Args:
      d: dimension (>= 2).
      k: degree (>= 0).
      t: inner products in [-1, 1].

    Returns:
      G_k(t), float64.

    >>> float(gegenbauer(3, 2, 0.0))  # the Legendre polynomial (3 t^2 - 1) / 2
    -0.5
    """
    t = np.asarray(t, np.float64)
    if d == 2:
        return special.eval_chebyt(k, t)
    alpha = (d - 2) / 2
    return special.eval_gegenbauer(k, alpha, t) / special.eval_gegenbauer(k, alpha, 1.0)


def _check_bound_args(d, degree):
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2:
        raise InvalidArgument(f"d must be an integer >= 2, got {d!r}")
    if isinstance(degree, bool) or not isinstance(degree, (int, np.integer)) or not 1 <= degree <= 40:
        raise InvalidArgument(f"degree must be an integer in 1..40, got {degree!r}")


def delsarte_bound(d: int, s: float, degree: int = 12, grid: int = 4000) -> float:
    """An upper bound on the number of points of a code in S^(d-1) with max cos <= s: the Delsarte
        LP bound f(1) / f_0 over f = sum_k f_k G_k with f_k >= 0 (k >= 1), f_0 = 1, f <= 0 on [-1, s].

        The LP is solved on a grid of [-1, s]; the polynomial it returns is then checked on all of
        [-1, s] (its critical points) and lowered by its largest value there if that is positive, so
        the bound is valid, not only the grid's. Over degree <= tau(s) its optimum is Levenshtein's
        bound; a higher degree can only tighten it.

        Args:
          d: dimension (>= 2).
          s: the max cos, in (-1, 1).
          degree: the polynomials' largest degree (1..40).
          grid: points of the LP's grid on [-1, s].

        Returns:
          The bound (a code's size is at most its floor); inf where no polynomial of this degree is
          feasible.

    X
        240.0
    """
    _check_bound_args(d, degree)
    s = float(s)
    if not -1.0 < s < 1.0:
        raise InvalidArgument(f"s must lie in (-1, 1), got {s!r}")
    t = -np.cos(np.linspace(0.0, np.pi, grid)) * (1 + s) / 2 + (s - 1) / 2  # Chebyshev-spaced
    G = np.stack([gegenbauer(d, k, t) for k in range(1, degree + 1)], axis=1)
    lp = linprog(np.ones(degree), A_ub=G, b_ub=-np.ones(grid), bounds=(0, None), method="highs")
    if lp.status != 0:
        return math.inf  # no such polynomial of this degree: no bound
    coef = np.concatenate([[1.0], lp.x])
    worst = _largest_value(d, coef, s)
    if worst >= 1.0:
        return math.inf
    return (coef.sum() - max(worst, 0.0)) / (1.0 - max(worst, 0.0))


def _largest_value(d: int, coef: np.ndarray, s: float) -> float:
    """max of sum_k coef_k G_k on [-1, s]: at an end or a critical point (the derivative's real roots)."""
    degree = len(coef) - 1
    x = np.cos(np.linspace(0.0, np.pi, degree + 1))  # interpolation at Chebyshev points is exact
    f = np.polynomial.Chebyshev.fit(x, sum(c * gegenbauer(d, k, x) for k, c in enumerate(coef)), degree)
    roots = f.deriv().roots()
    candidates = [-1.0, s, *[r.real for r in roots if abs(r.imag) < 1e-9 and -1 < r.real < s]]
    return float(max(f(c) for c in candidates))


def max_cos_lower_bound(d: int, K: int, degree: int = 12) -> float:
    """The smallest max cos any K unit vectors in R^d can have, from :func:`delsarte_bound`: the s at
    which the bound reaches K (bisection to 1e-12). Its arccos bounds every Tammes angle from above.

    Args:
      d: dimension (>= 2).
      K: number of points (>= 2).
      degree: the LP's largest degree.

    Returns:
      s such that every K-point code in S^(d-1) has max cos >= s.

    >>> round(max_cos_lower_bound(3, 4), 9)  # the tetrahedron: -1/3
    -0.333333333
    """
    _check_bound_args(d, degree)
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 2:
        raise InvalidArgument(f"K must be an integer >= 2, got {K!r}")
    lo, hi = -1.0 + 1e-12, 1.0 - 1e-12
    while hi - lo > 1e-12:
        mid = (lo + hi) / 2
        if delsarte_bound(d, mid, degree) < K:
            lo = mid
        else:
            hi = mid
    return lo
