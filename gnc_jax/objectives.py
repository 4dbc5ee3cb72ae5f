"""Smoothed max-min objectives on OB(d, K) and their exact (unsmoothed) scores.

Each problem is a :class:`Problem`: ``init`` draws parameters (a dict of manifold variables, each of
shape (d_max, K_max) with unit columns), ``loss(params, offsets, t)`` is the log-sum-exp smoothing
at temperature t (to be minimised; it upper-bounds the exact max term and is within t log(#terms) of
it), and ``score(params, col_mask)`` is the exact quantity the solver maximises (used to select
candidates; the final numbers are always recomputed by :mod:`gnc_jax.geometry`).

* Tammes, eq. (11): minimise max_{i != j} <w_i, w_j>.
* Softmax code, eq. (3): by minimax duality dist(w_k, conv{w_j : j != k}) =
  max_{||h|| = 1} min_{j != k} <w_k - w_j, h> whenever the distance is positive, so
  rho_one-vs-rest(W) = max_H min_k min_{j != k} <w_k - w_j, h_k>: the HardMax problem (5) with one
  feature per class. We optimise (W, H) jointly on OB(d, K) x OB(d, K); for any H the score is a
  lower bound on rho_one-vs-rest(W), tight at the optimal features of eq. (9).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from gnc_jax.geometry import pair_mask
from gnc_jax.sphere import padded_points


def tammes_terms(params):
    W = params["W"]
    return W.T @ W


def softmax_code_terms(params):
    """S[j, k] = <w_j - w_k, h_k>; the softmax-code margin is -max over j != k."""
    A = params["W"].T @ params["H"]
    return A - jnp.diag(A)[None, :]


def tammes_term_grads(params, rows, cols):
    """Gradients of the terms <w_i, w_j> at (rows, cols): d/dw_i = w_j, d/dw_j = w_i."""
    W = params["W"]
    n, (d, K) = len(rows), W.shape
    G = np.zeros((n, d, K))
    G[np.arange(n), :, rows] += W[:, cols].T
    G[np.arange(n), :, cols] += W[:, rows].T
    return {"W": G}


def softmax_code_term_grads(params, rows, cols):
    """Gradients of S[j, k] = <w_j - w_k, h_k> at (j, k) = (rows, cols)."""
    W, H = params["W"], params["H"]
    n, (d, K) = len(rows), W.shape
    GW, GH = np.zeros((n, d, K)), np.zeros((n, d, K))
    GW[np.arange(n), :, rows] += H[:, cols].T
    GW[np.arange(n), :, cols] -= H[:, cols].T
    GH[np.arange(n), :, cols] += (W[:, rows] - W[:, cols]).T
    return {"W": GW, "H": GH}


class Problem(NamedTuple):
    name: str
    variables: tuple[str, ...]
    terms: Callable  # params -> (K, K) matrix whose max over distinct real pairs is minimised
    term_grads: Callable  # (numpy params, rows, cols) -> {name: (n, d, K)} gradients of those terms
    symmetric: bool  # terms[i, j] == terms[j, i]: smooth over i < j only (half the exponentials)

    def init(self, key, d, K, d_max, K_max, dtype):
        keys = jax.random.split(key, len(self.variables))
        params = {}
        for v, k in zip(self.variables, keys):
            params[v], row_mask, col_mask = padded_points(k, d, K, d_max, K_max, dtype)
        return params, row_mask, col_mask

    def smoothing_offsets(self, col_mask):
        """0 on the terms the smoothing runs over (distinct real pairs; i < j if symmetric), -inf
        elsewhere. Computed once per schedule: an additive mask costs one add per term per step."""
        mask = pair_mask(col_mask)
        if self.symmetric:
            mask = jnp.triu(mask, 1)
        return jnp.where(mask, 0.0, -jnp.inf)

    def loss(self, params, offsets, t):
        """t * LSE(terms / t) over the terms where ``offsets`` is 0 (see :meth:`smoothing_offsets`)."""
        z = self.terms(params) + offsets
        return t * jax.nn.logsumexp(z / t)

    def value_and_grad(self, params, offsets, t):
        """``loss`` and its gradient in ``params`` with one exponential per term.

        The gradient of t * LSE(z / t) in z is the softmax P of z / t, so the parameter gradient is
        the terms' VJP applied to P; autodiff through ``logsumexp`` would exponentiate twice, and
        the exponentials are most of the cost of a step.
        """
        terms, vjp = jax.vjp(self.terms, params)
        z = terms + offsets
        m = jnp.max(z)
        e = jnp.exp((z - m) / t)
        total = jnp.sum(e)
        (grad,) = vjp(e / total)
        return m + t * jnp.log(total), grad

    def score(self, params, col_mask):
        """Exact objective to maximise: -max over distinct real pairs of the terms."""
        return -jnp.max(jnp.where(pair_mask(col_mask), self.terms(params), -jnp.inf))


TAMMES = Problem("tammes", ("W",), tammes_terms, tammes_term_grads, symmetric=True)
SOFTMAX_CODE = Problem(
    "softmax-code", ("W", "H"), softmax_code_terms, softmax_code_term_grads, symmetric=False
)
PROBLEMS = {p.name: p for p in (TAMMES, SOFTMAX_CODE)}


def get_problem(name: str) -> Problem:
    """Look up a problem by name ('tammes' or 'softmax-code')."""
    if name not in PROBLEMS:
        raise ValueError(f"problem must be one of {sorted(PROBLEMS)}, got {name!r}")
    return PROBLEMS[name]
