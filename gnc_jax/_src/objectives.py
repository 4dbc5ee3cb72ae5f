"""Smoothed max-min objectives on OB(d, K) and their exact (unsmoothed) scores.

Each problem is a :class:`Problem`: ``init`` draws parameters (a dict of manifold variables, each of
shape (d_max, K_max) with unit columns), ``loss(params, offsets, t)`` is the log-sum-exp smoothing
at temperature t (to be minimised; it upper-bounds the exact max term and is within t log(#terms) of
it), and ``score(params, col_mask)`` is the exact quantity the solver maximises (used to select
candidates; the final numbers are always recomputed by :mod:`gnc_jax._src.geometry`).

* Tammes, eq. (11): minimise max_{i != j} <w_i, w_j>.
* Softmax code, eq. (3): by minimax duality dist(w_k, conv{w_j : j != k}) =
  max_{||h|| = 1} min_{j != k} <w_k - w_j, h> whenever the distance is positive, so
  rho_one-vs-rest(W) = max_H min_k min_{j != k} <w_k - w_j, h_k>: the HardMax problem (5) with one
  feature per class. We optimise (W, H) jointly on OB(d, K) x OB(d, K); for any H the score is a
  lower bound on rho_one-vs-rest(W), tight at the optimal features of eq. (9).
* HardMax, eq. (5): the same terms with n features per class, H in OB(d, n K) (Theorem 3.2: its W
  is a softmax code; Theorem 3.5: the features of non-rattler classes collapse to eq. (9)).
* UFM with temperature, eq. (2), in the log-space form (C.2), and with weight decay, eq. (B.1): smooth
  losses of (W, H) for :mod:`gnc_jax._src.ufm`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from gnc_jax._src.errors import InvalidArgument
from gnc_jax._src.geometry import pair_mask
from gnc_jax._src.sphere import normalize_columns, padded_points, tangent_project

FEATURE_NOISE = 0.5


def tammes_terms(params):
    W = params["W"]
    return W.T @ W


def tammes_pullback(params, P):
    """The terms' VJP for a symmetric cotangent P: 2 W P, one product where autodiff of ``W.T @ W``
    forms two (W P^T and W P)."""
    return {"W": 2.0 * params["W"] @ P}


def hardmax_terms(params, n: int = 1):
    """S[j, c] = <w_j - w_{k(c)}, h_c> for feature column c of class k(c) = c // n (class-major).

    The HardMax loss (5) is the max over j != k(c); with n = 1 this is the softmax-code problem.
    """
    W, H = params["W"], params["H"]
    xp = np if isinstance(W, np.ndarray) else jnp  # numpy on the host (the polish): no op compiled per shape
    own = xp.sum(xp.repeat(W, n, axis=1) * H, axis=0)  # <w_{k(c)}, h_c>
    return W.T @ H - own[None, :]


def tammes_term_grads(params, rows, cols):
    """Gradients of the terms <w_i, w_j> at (rows, cols): d/dw_i = w_j, d/dw_j = w_i."""
    W = params["W"]
    n, (d, K) = len(rows), W.shape
    G = np.zeros((n, d, K))
    G[np.arange(n), :, rows] += W[:, cols].T
    G[np.arange(n), :, cols] += W[:, rows].T
    return {"W": G}


def hardmax_term_grads(params, rows, cols, n: int = 1):
    """Gradients of S[j, c] = <w_j - w_{k(c)}, h_c> at (j, c) = (rows, cols)."""
    W, H = params["W"], params["H"]
    m, idx, own = len(rows), np.arange(len(rows)), cols // n
    GW, GH = np.zeros((m,) + W.shape), np.zeros((m,) + H.shape)
    GW[idx, :, rows] += H[:, cols].T
    GW[idx, :, own] -= H[:, cols].T
    GH[idx, :, cols] += (W[:, rows] - W[:, own]).T
    return {"W": GW, "H": GH}


def _log_softplus(a):
    """log(log(1 + e^a)), finite for every finite a: below a = -30, log1p(e^a) = e^a (1 - e^a / 2 + ...)
    and the result is a - e^a / 2 to double precision (no underflow to log 0)."""
    small = a < -30.0
    a_big = jnp.where(small, 0.0, a)
    return jnp.where(small, a - 0.5 * jnp.exp(jnp.minimum(a, 0.0)), jnp.log(jax.nn.softplus(a_big)))


def ufm_class_logits(params, col_mask, tau, n: int):
    """a_c = log sum_{j != k(c)} exp(<w_j - w_{k(c)}, h_c> / tau) over real classes j, one per feature c.

    The cross-entropy of feature c is CE_c = log(1 + e^{a_c}) (eq. 2 written with margins)."""
    mask = jnp.repeat(pair_mask(col_mask), n, axis=1)
    z = jnp.where(mask, hardmax_terms(params, n) / tau, -jnp.inf)
    return jax.nn.logsumexp(z, axis=0)


def ufm_log_loss(params, col_mask, tau, n: int):
    """L_0 = tau log sum_{k, i} CE(W^T h_{k,i}, y_k, tau), eq. (C.2), computed in log space.

    Minimising L_0 is minimising the mean CE of eq. (2) (a monotone transform), but L_0 stays finite
    and its gradient O(1) as tau -> 0, where the CE itself underflows to exactly 0 in float64 (already
    near tau = 0.05 at the optimum of d = 3, K = 7)."""
    log_ce = _log_softplus(ufm_class_logits(params, col_mask, tau, n))
    return tau * jax.nn.logsumexp(jnp.where(jnp.repeat(col_mask, n), log_ce, -jnp.inf))


def ufm_mean_ce(params, col_mask, tau, n: int):
    """The objective of eq. (2): mean over real features of CE(W^T h_{k,i} / tau, y_k)."""
    ce = jax.nn.softplus(ufm_class_logits(params, col_mask, tau, n))
    mask = jnp.repeat(col_mask, n)
    return jnp.sum(jnp.where(mask, ce, 0.0)) / jnp.sum(mask)


def weight_decay_ufm_loss(params, col_mask, tau, n: int, weight_decay):
    """Eq. (B.1): mean CE + (lambda / 2)(||W||_F^2 + ||H||_F^2), W and H unconstrained."""
    reg = sum(
        jnp.sum(jnp.where(m[None, :], params[k] ** 2, 0.0))
        for k, m in (("W", col_mask), ("H", jnp.repeat(col_mask, n)))
    )
    return ufm_mean_ce(params, col_mask, tau, n) + 0.5 * weight_decay * reg


class Problem(NamedTuple):
    """A max-min arrangement problem: minimise the largest of the ``terms`` over its real entries.

    ``features_per_class`` is 0 for problems on W alone; n >= 1 adds features H of shape (d, n K),
    class-major, and the terms become (K, n K) with entry (j, c) real when j != k(c) = c // n.
    """

    name: str
    variables: tuple[str, ...]
    terms: Callable  # params -> (K, K) or (K, n K) matrix whose max over real entries is minimised
    term_grads: Callable  # (numpy params, rows, cols) -> {name: (m, d, columns)} gradients of those terms
    # terms[i, j] == terms[j, i]: the smoothing runs over every i != j, less t log 2 (its value over
    # i < j), so that the softmax of the terms is symmetric and ``pullback`` applies
    symmetric: bool
    features_per_class: int = 0
    score_field: str = "rho_one_vs_rest"  # the certified measure it maximises (a Separation field)
    # The Tammes search's part: 'solution' (its code is the answer), 'candidate' (its code may start
    # the polish, with cross-seeding) or '' (none).
    search_role: str = ""
    # The features the polish starts from: 'solver' (the solver's own H), 'weights' (eq. 9 from the
    # QP's weights) or '' (none).
    features_start: str = ""
    # symmetric terms: (params, P) -> the gradient of <P, terms> for a symmetric P (None: autodiff)
    pullback: Callable | None = None

    def column_masks(self, col_mask) -> dict:
        """Real columns of every variable, from the (K,) mask of real classes."""
        return {
            v: col_mask if v == "W" else jnp.repeat(col_mask, self.features_per_class) for v in self.variables
        }

    def term_mask(self, col_mask):
        """Real entries of ``terms``: j != k(c), both real."""
        mask = pair_mask(col_mask)
        if self.features_per_class > 1:
            mask = (np if isinstance(mask, np.ndarray) else jnp).repeat(mask, self.features_per_class, axis=1)
        return mask

    def init(self, key, d, K, d_max, K_max, dtype):
        """Random W on OB(d, K) (padded to (d_max, K_max)); features, if any, start as random
        perturbations of their class's w_k (tangent Gaussian noise of norm ~ ``FEATURE_NOISE``).

        Independent random features make most starts with n > 1 collapse two classifiers onto each
        other (a margin-0 trap of the smoothed problem: 12 of 16 starts for d=2, K=6, n=3; 3 of 16
        with n=1; none of 16 with this start)."""
        k_w, k_h = jax.random.split(key)
        W, row_mask, col_mask = padded_points(k_w, d, K, d_max, K_max, dtype)
        params = {"W": W}
        if self.features_per_class:
            n = self.features_per_class
            H = jnp.repeat(W, n, axis=1)
            # d may be a traced int64: its square root in ``dtype``, or H would come out float64
            root_d = jnp.sqrt(jnp.asarray(d, dtype))
            noise = jax.random.normal(k_h, H.shape, dtype) * row_mask[:, None] / root_d
            params["H"] = normalize_columns(H + FEATURE_NOISE * tangent_project(H, noise))
        return params, row_mask, col_mask

    def smoothing_offsets(self, col_mask):
        """0 on the terms the smoothing runs over (the real entries), -inf elsewhere. Computed once
        per schedule: an additive mask costs one add per term per step."""
        return jnp.where(self.term_mask(col_mask), 0.0, -jnp.inf)

    def _lse_offset(self, t):
        # a symmetric problem's smoothing over i != j counts every pair twice: t log 2 above i < j
        return t * jnp.log(2.0) if self.symmetric else 0.0

    def loss(self, params, offsets, t):
        """t * LSE(terms / t) over the terms where ``offsets`` is 0 (see :meth:`smoothing_offsets`)."""
        z = self.terms(params) + offsets
        return t * jax.nn.logsumexp(z / t) - self._lse_offset(t)

    def value_and_grad(self, params, offsets, t):
        """``loss`` and its gradient in ``params`` with one exponential per term.

        The gradient of t * LSE(z / t) in z is the softmax P of z / t, so the parameter gradient is
        the terms' VJP applied to P; autodiff through ``logsumexp`` would exponentiate twice, and
        the exponentials are most of the cost of a step. For symmetric terms P is symmetric and
        ``pullback`` forms the gradient with one product.
        """
        if self.pullback is None:
            terms, vjp = jax.vjp(self.terms, params)
        else:
            terms, vjp = self.terms(params), lambda P: (self.pullback(params, P),)
        z = terms + offsets
        m = jnp.max(z)
        e = jnp.exp((z - m) / t)
        total = jnp.sum(e)
        (grad,) = vjp(e / total)
        return m + t * jnp.log(total) - self._lse_offset(t), grad

    def score(self, params, col_mask):
        """Exact objective to maximise: -max over the real entries of the terms."""
        return -jnp.max(jnp.where(self.term_mask(col_mask), self.terms(params), -jnp.inf))

    def _term_blocks(self, params, col_mask, block: int):
        """The terms in column blocks of width ``block``, never all at once (memory O(K block)).

        Returns (number of blocks, ``terms_of(W, X_b, W_own_b)``, ``block_inputs(b)``, padding):
        column c of the terms is <w_j, x_c> - <w_{k(c)}, x_c> with x_c a column of W (Tammes,
        no own term) or of H (k(c) = c // n); ``block_inputs(b)`` gives block b's (X_b, W_own_b,
        mask of its real terms, owners k(c)); the columns are padded to whole blocks."""
        n = self.features_per_class
        W = params["W"]
        X = params["H"] if n else W
        K, C = W.shape[1], X.shape[1]
        blocks = -(-C // block)
        pad = blocks * block - C
        Xp = jnp.pad(X, ((0, 0), (0, pad)))
        real = jnp.pad(jnp.repeat(col_mask, n) if n else col_mask, (0, pad))
        owner = jnp.pad(jnp.arange(C) // max(n, 1), (0, pad))

        def terms_of(W, Xb, Wown):
            own = 0.0 if Wown is None else jnp.sum(Wown * Xb, axis=0)
            return W.T @ Xb - own

        def block_inputs(b):
            start = b * block
            Xb = jax.lax.dynamic_slice_in_dim(Xp, start, block, axis=1)
            own = jax.lax.dynamic_slice_in_dim(owner, start, block)
            mask = col_mask[:, None] & jax.lax.dynamic_slice_in_dim(real, start, block)[None, :]
            mask = mask & (jnp.arange(K)[:, None] != own[None, :])
            return Xb, (W[:, own] if n else None), mask, own

        return blocks, terms_of, block_inputs, pad

    def value_and_grad_blocks(self, params, col_mask, t, block: int):
        """:meth:`value_and_grad` over the real terms, computed in column blocks of width ``block``
        with a running maximum (the streaming log-sum-exp): nothing of size K x K is formed, so
        K = 10^5 fits where the (K, K) terms would take 80 GB in float64. Same loss and gradient as
        :meth:`value_and_grad` with :meth:`smoothing_offsets`."""
        W = params["W"]
        n = self.features_per_class
        blocks, terms_of, block_inputs, pad = self._term_blocks(params, col_mask, block)
        X = params["H"] if n else W
        dtype = W.dtype

        def body(carry, b):
            m, total, gW, gX = carry
            Xb, Wown, mask, own = block_inputs(b)
            S, vjp = jax.vjp(terms_of, W, Xb, Wown)
            z = jnp.where(mask, S, -jnp.inf)
            m_new = jnp.maximum(m, jnp.max(z))
            m_safe = jnp.where(jnp.isfinite(m_new), m_new, 0.0)
            rescale = jnp.exp((m - m_safe) / t)  # 0 while nothing was seen (m = -inf)
            e = jnp.exp((z - m_safe) / t)
            dW, dXb, dWown = vjp(e)
            if n:  # symmetric terms (Tammes): W's part equals X's, 2 gX below, and is not formed
                gW = (gW * rescale + dW).at[:, own].add(dWown)
            # block b's columns of X are still zero in gX: written once, here
            gX = jax.lax.dynamic_update_slice_in_dim(gX * rescale, dXb, b * block, axis=1)
            return (m_new, total * rescale + jnp.sum(e), gW, gX), None

        gX0 = jnp.zeros((X.shape[0], X.shape[1] + pad), dtype)
        init = (jnp.asarray(-jnp.inf, dtype), jnp.asarray(0.0, dtype), jnp.zeros_like(W), gX0)
        (m, total, gW, gX), _ = jax.lax.scan(body, init, jnp.arange(blocks))
        gX = gX[:, : X.shape[1]]
        loss = m + t * jnp.log(total)
        if n:
            return loss, {"W": gW / total, "H": gX / total}
        return loss - self._lse_offset(t), {"W": 2.0 * gX / total}

    def score_blocks(self, params, col_mask, block: int):
        """:meth:`score` in column blocks of width ``block`` (memory O(K block))."""
        blocks, terms_of, block_inputs, _ = self._term_blocks(params, col_mask, block)
        W = params["W"]

        def body(best, b):
            Xb, Wown, mask, _ = block_inputs(b)
            return jnp.maximum(best, jnp.max(jnp.where(mask, terms_of(W, Xb, Wown), -jnp.inf))), None

        best, _ = jax.lax.scan(body, jnp.asarray(-jnp.inf, W.dtype), jnp.arange(blocks))
        return -best


TAMMES = Problem(
    "tammes",
    ("W",),
    tammes_terms,
    tammes_term_grads,
    True,
    pullback=tammes_pullback,
    score_field="min_angle_deg",
    search_role="solution",
)


@functools.cache
def hardmax_problem(n: int, name: str = "hardmax") -> Problem:
    """The HardMax problem (5) with n features per class (one Problem object per n, so that compiled
    solvers are cached per n)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidArgument(f"n must be an integer >= 1, got {n!r}")
    return Problem(
        name,
        ("W", "H"),
        functools.partial(hardmax_terms, n=n),
        functools.partial(hardmax_term_grads, n=n),
        symmetric=False,
        features_per_class=n,
        features_start="solver",
    )


SOFTMAX_CODE = hardmax_problem(1, "softmax-code")._replace(search_role="candidate", features_start="weights")
PROBLEMS = {p.name: p for p in (TAMMES, SOFTMAX_CODE)}
NAMES = ("tammes", "softmax-code", "hardmax")


def get_problem(name: str, n: int = 1) -> Problem:
    """Look up a problem: 'tammes', 'softmax-code', or 'hardmax' with n features per class."""
    if name == "hardmax":
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise InvalidArgument(f"n must be an integer >= 1, got {n!r}")
        return hardmax_problem(int(n))
    if name not in PROBLEMS:
        raise InvalidArgument(f"problem must be one of {list(NAMES)}, got {name!r}")
    return PROBLEMS[name]
