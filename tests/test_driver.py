"""The shared driver: optax chains and projections (closed forms of the first Adam step)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from gnc_jax._src.driver import (
    POLISH_FULL_UNKNOWNS,
    SolverSettings,
    euclidean_adam,
    retract,
    riemannian_adam,
    run_schedule,
)
from gnc_jax._src.sphere import normalize_columns

pytestmark = pytest.mark.usefixtures("x64")  # float64: the closed forms hold to rounding (1e-15)


def _problem(key, d=4, K=6):
    k1, k2 = jax.random.split(key)
    W = normalize_columns(jax.random.normal(k1, (d, K)))
    target = jax.random.normal(k2, (d, K))
    value_and_grad = lambda p, t: jax.value_and_grad(lambda p: jnp.sum((p["W"] - target) ** 2) / t)(p)
    return W, target, value_and_grad


def test_riemannian_adam_first_step_is_the_signed_tangent_gradient_then_retraction():
    """Adam's first bias-corrected update is g / |g| elementwise: one step of size lr * t is
    W - lr t sign(P_W g) on unmasked columns, normalised; padded columns do not move."""
    W, target, value_and_grad = _problem(jax.random.key(0))
    mask = jnp.array([1.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    t = jnp.array([0.5])
    state = run_schedule(value_and_grad, {"W": W}, riemannian_adam({"W": mask}), retract, t, 0.1 * t)
    g = 2 * (W - target) / 0.5
    g_tan = g - W * jnp.sum(W * g, axis=0)
    expected = normalize_columns(W - 0.05 * jnp.sign(g_tan) * mask)
    chex.assert_trees_all_close(state.params["W"], expected, rtol=1e-12, atol=1e-12)
    chex.assert_trees_all_close(state.params["W"][:, 4:], W[:, 4:], rtol=0, atol=1e-15)  # renormalised only
    np.testing.assert_allclose(np.linalg.norm(state.params["W"], axis=0), 1.0, rtol=1e-14)


def test_euclidean_adam_with_the_orthant_projection_stays_feasible_and_steps_by_the_given_size():
    """The step is exactly the given step size (no temperature scaling hidden in the driver), and
    the projection (optax's non-negative orthant) is applied after it."""
    W, target, value_and_grad = _problem(jax.random.key(1))
    ones = {"W": jnp.ones(W.shape[1])}
    temps = jnp.array([2.0])  # the loss's temperature only: the step is 0.3, not 0.3 * 2
    project = lambda p: {"W": optax.projections.projection_non_negative(p["W"])}
    state = run_schedule(value_and_grad, {"W": W}, euclidean_adam(ones), project, temps, jnp.array([0.3]))
    expected = jnp.maximum(W - 0.3 * jnp.sign(W - target), 0.0)
    chex.assert_trees_all_close(state.params["W"], expected, rtol=1e-12, atol=1e-12)
    assert float(jnp.min(state.params["W"])) >= 0.0


def test_a_non_finite_loss_freezes_the_instance_at_its_last_finite_parameters():
    W, _, _ = _problem(jax.random.key(2))
    # finite for the first two temperatures, NaN from the third on
    value_and_grad = lambda p, t: (
        jnp.where(t > 0.25, jnp.sum(p["W"]), jnp.nan),
        {"W": jnp.ones_like(p["W"])},
    )
    temps = jnp.array([1.0, 0.5, 0.2, 0.1])
    opt = riemannian_adam({"W": jnp.ones(W.shape[1])})
    frozen = run_schedule(value_and_grad, {"W": W}, opt, retract, temps, 0.1 * temps)
    two = run_schedule(value_and_grad, {"W": W}, opt, retract, temps[:2], 0.1 * temps[:2])
    assert bool(frozen.done) and not bool(two.done)
    chex.assert_trees_all_equal(frozen.params, two.params)


def test_polish_iterations_fall_with_the_square_of_the_lp_size():
    s = SolverSettings()
    full = POLISH_FULL_UNKNOWNS
    # all iterations for every Tammes polish at d = 3 up to K = 130 and softmax code (W and H) up to 85
    assert [s.polish_iters_for(u) for u in (1, 2 * 130, 2 * 2 * 85, full)] == [s.lp_polish_iters] * 4
    # above, the polish's cost (iterations x unknowns^2, one LP costing ~ unknowns^2) stays at the full
    # polish's, to one iteration's rounding, until the floor of 20 iterations; fewer with every unknown
    budget = s.lp_polish_iters * full**2
    iters = [s.polish_iters_for(u) for u in range(full, 2000)]
    assert all(a >= b for a, b in zip(iters, iters[1:]))
    for u, n in zip(range(full, 2000), iters):
        if n == 20:  # the floor: the cost budget would allow no more than that
            assert budget / u**2 <= 20.5, (u, n)
        else:
            assert n > 20 and abs(n * u**2 - budget) <= 0.5 * u**2, (u, n)
    assert s.polish_iters_for(480) == 50  # the softmax code at (7, 40): 6 x 80 unknowns
    assert s.polish_iters_for(896) == 20  # (8, 64): 7 x 128
    assert s.replace(lp_polish_iters=5).polish_iters_for(10**6) == 5  # a smaller setting is kept
    assert s.replace(lp_polish_iters=0).polish_iters_for(896) == 0
