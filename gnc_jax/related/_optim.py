"""Pieces shared by the related-theory modules: column-wise cross-entropy and L-BFGS to a gradient
tolerance."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
import optimistix as optx


def cross_entropy(Z, labels):
    """CE of every column of the logits Z (K, N) against its integer label: (N,)."""
    return jax.nn.logsumexp(Z, axis=0) - jnp.take_along_axis(Z, labels[None], axis=0)[0]


class _GradientNormStop(optx.OptaxMinimiser):
    """optimistix's optax minimiser, stopping at the first iterate whose gradient 2-norm is <= ``atol``
    (instead of a Cauchy test on the last step): the stationarity the callers report. optimistix
    decides termination on the iterate a step started from, so that step keeps it."""

    def step(self, fn, y, args, options, state, tags):
        new_y, state, aux = super().step(fn, y, args, options, state, tags)
        done = optx.two_norm(eqx.filter_grad(lambda x: fn(x, args)[0])(y)) <= self.atol
        new_y = jax.tree.map(lambda a, b: jnp.where(done, a, b), y, new_y)
        return new_y, eqx.tree_at(lambda s: s.terminate, state, done), aux


def minimise_lbfgs(loss, x0, grad_tol, max_steps: int):
    """optax's L-BFGS (zoom line search) on ``loss`` from the pytree ``x0``, run by
    ``optimistix.minimise`` until the gradient norm is <= grad_tol or ``max_steps`` (static) steps;
    traceable (call it under jit with max_steps static).

    Returns (x, steps, gradient norm)."""
    solver = _GradientNormStop(optax.lbfgs(), rtol=0.0, atol=grad_tol)
    sol = optx.minimise(lambda x, _: loss(x), solver, x0, max_steps=max_steps, throw=False)
    steps = sol.stats["num_steps"] - sol.state.terminate  # the stopping step does not move
    return sol.value, steps, optx.two_norm(jax.grad(loss)(sol.value))
