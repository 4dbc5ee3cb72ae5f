"""Exact minimum-norm point of a polytope: Wolfe's active-set algorithm (Wolfe 1976).

The one-vs-rest distance of eq. (3), dist(w_k, conv{w_j : j != k}), is the norm of the minimum-norm
point of conv{w_k - w_j : j != k}, a QP over the simplex. Wolfe's algorithm keeps an affinely
independent "corral" of at most d + 1 points (Caratheodory), so every iteration solves one small
least-squares problem and the method terminates exactly; projected gradient stalls when d << K.

Affine minimisers are computed from the point coordinates by least squares rather than from the
bordered Gram system: that keeps the error at machine precision where the Gram matrix would square
the condition number (relevant when the distance is close to 0).

Certificate (Frank-Wolfe / duality gap): for the returned x in the polytope,
    gap = ||x||^2 - min_j <x, p_j>  >= 0,
and the true distance lies in [max(0, min_j <x, p_j>) / ||x||, ||x||], an interval of width gap/||x||.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse

from gnc_jax._src.process import one_at_a_time


class MinNormPoint(NamedTuple):
    """Result of :func:`min_norm_point` for points P (d, n)."""

    x: jax.Array  # (d,) the minimum-norm point of conv{p_j}
    weights: jax.Array  # (n,) convex weights, x = P @ weights, zero off the support
    gap: jax.Array  # () Frank-Wolfe gap ||x||^2 - min_j <x, p_j>
    iterations: jax.Array  # () major + minor cycles used


def min_norm_point(
    P: jax.Array, valid: jax.Array, tol: float = 1e-15, max_iter: int | None = None, gram: bool = False
):
    """Minimum-norm point of conv{P[:, j] : valid[j]} by Wolfe's algorithm.

    Args:
      P: points as columns, shape (d, n), float64 for certified results.
      valid: boolean mask (n,), at least one True.
      tol: stop when the Frank-Wolfe gap is below ``tol`` (absolute, squared-distance units).
      max_iter: bound on major + minor cycles (default 20 (d + 1) + 50).
      gram: solve each affine minimisation from the Gram matrix P^T P (computed once) instead of by
        least squares on the coordinates: an (m x m) solve per iteration instead of an SVD of a
        (d x m) matrix, faster at large d, at the price of squaring the condition number (use it
        when the distance is well away from 0). The certificate is computed from the
        coordinates either way.

    Returns:
      MinNormPoint(x, weights, gap, iterations).
    """
    # Long because Wolfe's major and minor cycles share one lax.while_loop state.
    d, n = P.shape
    m = min(d + 1, n)  # corral capacity: affinely independent sets in R^d have <= d + 1 points
    if max_iter is None:
        max_iter = 20 * (d + 1) + 50
    slots = jnp.arange(m)
    Q = P.T @ P if gram else None
    sq = jnp.where(valid, jnp.sum(P * P, axis=0), jnp.inf)
    j0 = jnp.argmin(sq)
    idx = jnp.zeros(m, j0.dtype).at[0].set(j0)
    act = jnp.zeros(m, bool).at[0].set(True)
    lam = jnp.zeros(m, P.dtype).at[0].set(1.0)
    state = (idx, act, lam, P[:, j0], jnp.array(False), jnp.array(False), jnp.array(0))

    def cond(s):
        return ~s[5] & (s[6] < max_iter)

    def body(s):
        idx, act, lam, x, minor, _, it = s
        # Major cycle: add the point most violating the optimality condition.
        g = jnp.where(valid, P.T @ x, jnp.inf)
        j = jnp.argmin(g)
        gap = x @ x - g[j]
        in_corral = jnp.any(act & (idx == j))
        stop = ~minor & ((gap <= tol) | in_corral | ~jnp.any(~act))
        add = ~minor & ~stop
        free = jnp.argmin(act)
        idx_a = jnp.where(add, idx.at[free].set(j), idx)
        act_a = jnp.where(add, act.at[free].set(True), act)
        # Affine minimiser of the corral: base point b, least squares on the differences.
        b = jnp.argmax(jnp.where(act_a, lam, -1.0))
        others = act_a & (slots != b)
        if gram:  # normal equations of the least squares below, from Q
            Qs = Q[idx_a][:, idx_a]
            BtB = Qs - Qs[:, b][:, None] - Qs[b][None, :] + Qs[b, b]
            pair = others[:, None] & others[None, :]
            BtB = jnp.where(pair, BtB, jnp.diag(jnp.where(others, 0.0, 1.0)))
            beta = jnp.linalg.solve(BtB, jnp.where(others, Qs[b, b] - Qs[:, b], 0.0))
        else:
            Ps = P[:, idx_a] * act_a
            B = (Ps - Ps[:, b][:, None]) * others
            beta = jnp.linalg.lstsq(B, -Ps[:, b])[0]
        alpha = jnp.where(others, beta, 0.0)
        alpha = alpha.at[b].set(1.0 - jnp.sum(alpha))
        positive = jnp.all(jnp.where(act_a, alpha > 0, True))
        # Minor cycle: move from lam towards alpha until a weight hits zero, drop it.
        shrink = act_a & (alpha <= 0)
        ratios = jnp.where(shrink, lam / jnp.where(shrink, lam - alpha, 1.0), jnp.inf)
        theta = jnp.clip(jnp.min(ratios), 0.0, 1.0)
        lam_m = lam + theta * (alpha - lam)
        drop = act_a & ((lam_m <= 0) | (slots == jnp.argmin(ratios)))
        act_m = act_a & ~drop
        lam_m = jnp.where(act_m, lam_m, 0.0)
        lam_m = lam_m / jnp.sum(lam_m)
        lam_n = jnp.where(positive, jnp.where(act_a, alpha, 0.0), lam_m)
        act_n = jnp.where(positive, act_a, act_m)
        x_n = (P[:, idx_a] * act_n) @ lam_n
        # Safeguard: every exact step lowers ||x||; a step that raises it or is not finite comes from
        # an ill-conditioned affine solve (the Gram form squares the condition number, so its gap
        # stalls near 1e-13 and the corral fills with nearly dependent points). Stop at the last
        # good x: the gap below is computed from it and stays an honest certificate.
        stop = stop | ~jnp.all(jnp.isfinite(x_n)) | (x_n @ x_n > (1 + 1e-9) * (x @ x))
        keep = lambda old, new: jnp.where(stop, old, new)
        return (
            keep(idx, idx_a),
            keep(act, act_n),
            keep(lam, lam_n),
            keep(x, x_n),
            keep(minor, ~positive),
            stop,
            it + 1,
        )

    idx, act, lam, x, _, _, it = jax.lax.while_loop(cond, body, state)
    weights = jnp.zeros(n, P.dtype).at[idx].add(jnp.where(act, lam, 0.0))
    gap = x @ x - jnp.min(jnp.where(valid, P.T @ x, jnp.inf))
    return MinNormPoint(x, weights, gap, it)


def one_vs_rest(W: jax.Array, col_mask: jax.Array, tol: float = 1e-15):
    """Minimum-norm points of conv{w_k - w_j : j != k} for every k (vmapped), eq. (3).

    Args:
      W: (d, K) unit columns (padded dimensions are zero rows).
      col_mask: (K,) real columns.

    Returns:
      MinNormPoint with a leading K axis; ``weights[k]`` are the convex weights of the projection
      of w_k onto conv{w_j : j != k} (zero at j = k and at padded columns).
    """
    K = W.shape[1]

    def single(k):
        P = W[:, k][:, None] - W
        return min_norm_point(P, col_mask & (jnp.arange(K) != k), tol)

    return jax.vmap(single)(jnp.arange(K))


def distances_from_weights(W: jax.Array, weights: jax.Array) -> jax.Array:
    """||w_k - W v_k|| with the convex weights v_k held fixed (rows of ``weights``).

    With ``weights = stop_gradient(optimal weights)`` this is differentiable in W and, by the envelope
    theorem (Danskin), its gradient equals the gradient of the one-vs-rest distance wherever the
    distance is positive; no differentiation runs through the QP iterations.
    """
    residual = W - W @ weights.T  # column k: w_k - sum_j v_kj w_j
    return jnp.linalg.norm(residual, axis=0)


@one_at_a_time
@functools.partial(jax.jit, static_argnames=("m", "tol", "gram"))
def _screened_chunk(W, ks, directions, support, m: int, tol: float, gram: bool):
    """Wolfe for the classes ``ks`` on m candidates j != k: the previous ``support`` (c, K) first,
    then the largest <w_j, direction_k>. The Frank-Wolfe gap is then taken over *all* K points, so
    it certifies the full problem."""
    rows = jnp.arange(ks.shape[0])
    own = W[:, ks].T  # (c, d)
    rank = jnp.where(support, jnp.inf, directions @ W).at[rows, ks].set(-jnp.inf)
    _, cand = jax.lax.top_k(rank, m)
    P = own[:, :, None] - jnp.transpose(W[:, cand], (1, 0, 2))  # (c, d, m)
    res = jax.vmap(lambda p: min_norm_point(p, jnp.ones(m, bool), tol, gram=gram))(P)
    x = res.x
    farthest = jnp.max((x @ W).at[rows, ks].set(-jnp.inf), axis=1)  # max_{j != k} <x, w_j>
    gap = jnp.sum(x * x, axis=1) - (jnp.sum(x * own, axis=1) - farthest)
    return x, cand, res.weights, gap, res.iterations


def one_vs_rest_screened(
    W,
    directions=None,
    classes=None,
    candidates: int = 128,
    chunk: int = 64,
    tol: float = 1e-15,
    certify_tol: float = 1e-12,
    max_rounds: int = 8,
) -> MinNormPoint:
    """One-vs-rest minimum-norm points for large K by column generation (host loop over chunks).

    The support of class k's projection lies among the points j with the largest <w_j, x_k> (they
    span the face of the hull nearest to w_k), so Wolfe runs on ``candidates`` of them instead of all
    K - 1, in Gram form (:func:`min_norm_point` with ``gram=True``), and the certificate is checked
    against all K points. Round 0 ranks candidates by ``directions`` (default w_k; a good guess of
    the optimal feature h_k of eq. (9) saves a round); every later round keeps the previous support
    and fills up with the points that violate optimality most (largest <w_j, x_k>), so the distance
    can only decrease (column generation); from round 2 on the candidates double. A class leaves
    once its gap is <= ``certify_tol``; classes still above it after the last round get one more
    round in coordinate form (least squares, full precision). Memory is O(K (chunk + d)) beyond W;
    every gap is exact whatever the rounds did.

    Args:
      W: (d, K) unit columns, float64, no padding.
      directions: optional (d, K) initial ranking directions.
      classes: the classes k to solve (default all K).

    Returns:
      MinNormPoint with a leading axis over ``classes`` (``weights`` a ``scipy.sparse.csr_array``
      (len(classes), K): each row holds its support, at most d + 1 points; ``iterations`` summed
      over rounds).
    """
    # Long because column generation (solve, price, add candidates) is one loop.
    W = jnp.asarray(W)
    d, K = W.shape
    classes = np.arange(K) if classes is None else np.asarray(classes)
    n = len(classes)
    dirs = np.array(W if directions is None else directions, dtype=np.float64).T[classes]  # (n, d)
    x, gap, it = np.zeros((n, d)), np.full(n, np.inf), np.zeros(n, np.int64)
    support = [np.zeros(0, np.int64)] * n  # each class's points with positive weight, and the weights
    lams = [np.zeros(0)] * n
    chunk = min(chunk, n)

    def support_mask(rows):
        mask = np.zeros((len(rows), K), bool)
        for r, row in enumerate(rows):
            mask[r, support[row]] = True
        return mask

    def solve_round(todo, m, gram):
        for start in range(0, len(todo), chunk):
            rows = todo[start : start + chunk]
            rows_pad = np.concatenate([rows, np.full(chunk - len(rows), rows[-1])])  # one compile per m
            xs, cand, lam, g, its = jax.device_get(
                _screened_chunk(
                    W,
                    jnp.asarray(classes[rows_pad]),
                    jnp.asarray(dirs[rows_pad]),
                    jnp.asarray(support_mask(rows_pad)),
                    m,
                    tol,
                    gram,
                )
            )
            r = len(rows)
            it[rows] += its[:r]
            better = g[:r] < gap[rows]
            sel = rows[better]
            x[sel], gap[sel], dirs[sel] = xs[:r][better], g[:r][better], xs[:r][better]
            for row, c, w in zip(sel, cand[:r][better], lam[:r][better]):
                support[row], lams[row] = c[w > 0], w[w > 0]
        return todo[gap[todo] > certify_tol]

    todo, m = np.arange(n), min(candidates, K - 1)
    for rnd in range(max_rounds):
        if rnd >= 2:
            m = min(2 * m, K - 1)
        todo = solve_round(todo, m, gram=True)
        if not len(todo) or m == K - 1 and rnd >= 2:
            break
    if len(todo):  # the Gram form stalls near its squared condition number: finish in coordinates
        solve_round(todo, m, gram=False)
    rows = np.repeat(np.arange(n), [len(c) for c in support])
    weights = scipy.sparse.csr_array((np.concatenate(lams), (rows, np.concatenate(support))), shape=(n, K))
    return MinNormPoint(jnp.asarray(x), weights, jnp.asarray(gap), jnp.asarray(it))
