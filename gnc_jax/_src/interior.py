"""Exact local optima of the Tammes problem (eq. 11) by a batched primal-dual interior-point method.

From a configuration W near a local optimum, solve the local problem

    minimise s  over (W, s)  subject to  <w_i, w_j> <= s  for all i < j,  W in OB(d, K),

by Newton steps on its perturbed KKT conditions (multipliers lam_ij >= 0, slacks g_ij = s - <w_i, w_j>):

    sum_ij lam_ij grad <w_i, w_j> = 0 (tangent to OB(d, K)),   sum_{i<j} lam_ij = 1,   lam_ij g_ij = tau,

with tau driven to 0 (a tenth of the mean complementarity after each long step). The multipliers are
eliminated pair by pair, which leaves one dense system in the (d - 1) K tangent coordinates, solved by
Cholesky: the Gram matrix of the constraint gradients weighted by lam / g, less its rank-one part
along s. The Lagrangian's own curvature (the sphere's and that of the cosines) is left out: at a
rigid packing the optimum is a vertex, fixed by its active constraints alone (as for the SLP polish
of :mod:`gnc_jax._src.polish`), and that curvature is negative in the free directions (rattlers,
rotations), where it made the system indefinite and a third of the Cholesky factorisations fail.
A small relative regulariser, raised after a failed step, keeps those directions bounded. Steps are
chosen from a few lengths by the barrier merit s - tau sum log g with a fraction-to-boundary rule.

Why it is here: the search (:mod:`gnc_jax._src.search`) ranks members by their exact minimum chord,
which the log-sum-exp finish leaves too noisy and the SLP polish is too slow to give
(docs/decisions.md).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from gnc_jax._src.sphere import tangent_bases

# Step lengths tried along each Newton direction (the longest acceptable one is taken).
STEP_LENGTHS = (1.0, 0.7, 0.4, 0.2, 0.1, 0.04, 0.01)


def _moved(X, B, u):
    """X moved by tangent coordinates u (K, d - 1) and retracted onto OB(d, K)."""
    Y = X + jnp.einsum("kdm,km->dk", B, u)
    return Y / jnp.linalg.norm(Y, axis=0)


def _pairs(col, upper: bool):
    """The constrained pairs: i != j (or i < j where ``upper``), both real points (``col``)."""
    K = col.shape[0]
    shape = jnp.triu(jnp.ones((K, K), bool), 1) if upper else ~jnp.eye(K, dtype=bool)
    return shape & col[:, None] & col[None, :]


def _slacks(X, s, col):
    """s - <w_i, w_j> on the constrained pairs i < j, 1 elsewhere."""
    return jnp.where(_pairs(col, True), s - X.T @ X, 1.0)


def _merit(X, s, tau, col):
    """The barrier merit s - tau sum_{i<j} log(s - <w_i, w_j>) and the slacks (+inf when infeasible)."""
    g = _slacks(X, s, col)
    value = s - tau * jnp.sum(jnp.log(jnp.maximum(g, 1e-300)))
    return jnp.where(jnp.all(g > 0), value, jnp.inf), g


def _newton_direction(X, s, lam, tau, reg, col):
    """The primal-dual Newton direction (du (K, d - 1), ds, dlam (K, K)), whether it is finite, and
    the tangent bases. ``lam`` is symmetric with a zero diagonal (lam[i, j] is pair {i, j}'s); a
    padded point (not in ``col``) is in no constraint and gets an identity block (it stays put)."""
    d, K = X.shape
    m = d - 1
    off = _pairs(col, False)
    g = jnp.where(off, s - X.T @ X, 1.0)
    D = jnp.where(off, lam / g, 0.0)
    B = tangent_bases(X)
    a = jnp.einsum("kdm,dj->kjm", B, X)  # a[i, j]: the gradient of <w_i, w_j> in w_i's tangent coordinates
    b = jnp.einsum("ij,ijm->im", D, a)
    D_sum = 0.5 * jnp.sum(D)
    # The Gram matrix of the constraint gradients weighted by D, less its part along s, in blocks
    # (i, j) of (d - 1) x (d - 1), in the order of the tangent coordinates: one pass over K^2 m^2 entries.
    eye = jnp.eye(K, dtype=bool)[:, None, :, None]
    diag = jnp.einsum("ij,ijm,ijn->imn", D, a, a)[:, :, None, :]
    cross = (
        D[:, None, :, None]
        * jnp.transpose(a, (0, 2, 1))[:, :, :, None]
        * jnp.swapaxes(a, 0, 1)[:, None, :, :]
    )
    A = jnp.where(eye, diag, cross) - b[:, :, None, None] * b[None, None, :, :] / D_sum
    A = A.reshape(K * m, K * m)
    b = b.reshape(-1)
    r = jnp.where(off, tau / g, 0.0)
    rhs_u = -jnp.einsum("ij,ijm->im", r, a).reshape(-1)
    rhs_s = 1.0 - 0.5 * jnp.sum(r)
    scale = jnp.maximum(jnp.max(jnp.diag(A)), 1e-300)
    padded = jnp.repeat(jnp.where(col, 0.0, 1.0), m).astype(X.dtype)
    L = jnp.linalg.cholesky(A / scale + reg * jnp.eye(K * m, dtype=X.dtype) + jnp.diag(padded))
    du = jax.scipy.linalg.cho_solve((L, True), (rhs_u - b * rhs_s / D_sum) / scale).reshape(K, m)
    ds = (b @ du.reshape(-1) - rhs_s) / D_sum
    P = jnp.sum(a * du[:, None, :], axis=2)  # the change of <w_i, w_j> from w_i's move
    dg = ds - P - P.T
    dlam = jnp.where(off, -lam + r - D * dg, 0.0)
    finite = jnp.all(jnp.isfinite(du)) & jnp.isfinite(ds) & jnp.all(jnp.isfinite(dlam))
    return du, ds, dlam, finite, B


def interior_point(X: jax.Array, iterations: int, start_gap: float = 2e-3, col=None) -> jax.Array:
    """The configuration after ``iterations`` primal-dual steps toward the local optimum near X.

    Pure and traceable (a ``lax.scan`` of fixed length: vmap it over a population). It starts at
    s = max cos + ``start_gap`` (1 - max cos), every multiplier tau / g, tau such that they sum to
    1. Each step lowers the barrier merit, not necessarily the largest cosine: judge the result by
    its exact minimum chord (it may end below the X it was given).

    Args:
      X: (d, K) unit columns, float64.
      iterations: Newton steps.
      start_gap: the starting slack of the largest cosine, relative to 1 - max cos.
      col: (K,) bool, the real points (None: all); the others are padding, constrain nothing and
        stay where they are (pairs of several sizes stacked in one program).
    """
    K = X.shape[1]
    n_pairs = K * (K - 1) / 2 if col is None else jnp.sum(_pairs(col, True))  # a constant if it can be
    col = jnp.ones(K, bool) if col is None else col
    off = _pairs(col, False)
    max_cos = jnp.max(jnp.where(off, X.T @ X, -2.0))
    s = max_cos + start_gap * (1.0 - max_cos)
    g = jnp.where(off, s - X.T @ X, 1.0)
    tau = 1.0 / (0.5 * jnp.sum(jnp.where(off, 1.0 / g, 0.0)))
    lam = jnp.where(off, tau / g, 0.0)
    lengths = jnp.asarray(STEP_LENGTHS, X.dtype)
    upper = _pairs(col, True)

    def step(carry, _):
        X, s, lam, tau, reg = carry
        du, ds, dlam, finite, B = _newton_direction(X, s, lam, tau, reg, col)
        du, ds, dlam = (jnp.where(finite, v, 0.0) for v in (du, ds, dlam))
        merit, g = _merit(X, s, tau, col)

        def trial(length):
            value, g_new = _merit(_moved(X, B, length * du), s + length * ds, tau, col)
            inside = jnp.all(jnp.where(upper, g_new >= 0.005 * g, True))  # fraction to the boundary
            return jnp.where(inside, value, jnp.inf)

        values = jax.vmap(trial)(lengths)
        good = values <= merit + 1e-14 * jnp.abs(merit)
        taken = finite & jnp.any(good)
        length = jnp.where(taken, lengths[jnp.argmax(good)], 0.0)
        X = jnp.where(taken, _moved(X, B, length * du), X)
        s = s + length * ds
        shrink = jnp.where(dlam < 0, -lam / jnp.where(dlam < 0, dlam, -1.0), jnp.inf)
        dual_length = jnp.where(taken, jnp.minimum(1.0, 0.99 * jnp.min(shrink)), 0.0)
        lam = jnp.maximum(lam + dual_length * dlam, jnp.where(off, 1e-300, 0.0))
        mean_gap = jnp.sum(jnp.where(upper, lam * _slacks(X, s, col), 0.0)) / n_pairs
        tau = jnp.where(taken & (length > 0.3), jnp.maximum(0.1 * mean_gap, 1e-15), tau)
        reg = jnp.where(taken, jnp.maximum(reg / 10, 1e-14), jnp.minimum(reg * 100, 1e2))
        return (X, s, lam, tau, reg), None

    (X, *_), _ = jax.lax.scan(step, (X, s, lam, tau, jnp.asarray(1e-10, X.dtype)), None, length=iterations)
    return X
