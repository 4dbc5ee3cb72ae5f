"""Pieces shared by the related-theory modules: column-wise cross-entropy and an L-BFGS loop."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax


def cross_entropy(Z, labels):
    """CE of every column of the logits Z (K, N) against its integer label: (N,)."""
    return jax.nn.logsumexp(Z, axis=0) - jnp.take_along_axis(Z, labels[None], axis=0)[0]


def minimise_lbfgs(loss, x0, grad_tol, max_steps):
    """optax's L-BFGS (zoom line search) on ``loss`` from the pytree ``x0``, in a ``lax.while_loop``
    until the gradient norm is <= grad_tol or max_steps steps; traceable (call it under jit).

    Returns (x, steps, gradient norm)."""
    opt = optax.lbfgs()
    value_and_grad = optax.value_and_grad_from_state(loss)

    def grad_norm(x):
        return jnp.sqrt(sum(jnp.sum(v**2) for v in jax.tree_util.tree_leaves(jax.grad(loss)(x))))

    def body(carry):
        x, state, step, _ = carry
        value, grad = value_and_grad(x, state=state)
        updates, state = opt.update(grad, state, x, value=value, grad=grad, value_fn=loss)
        x = optax.apply_updates(x, updates)
        return x, state, step + 1, grad_norm(x)

    x, _, steps, gnorm = jax.lax.while_loop(
        lambda c: (c[2] < max_steps) & (c[3] > grad_tol), body, (x0, opt.init(x0), 0, grad_norm(x0))
    )
    return x, steps, gnorm
