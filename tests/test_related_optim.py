"""related/_optim.minimise_lbfgs: optax's L-BFGS run by optimistix to a gradient-norm tolerance."""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from gnc_jax.related._optim import minimise_lbfgs


@functools.partial(jax.jit, static_argnums=(0, 3))
def _run(loss, x0, grad_tol, max_steps):
    return minimise_lbfgs(loss, x0, grad_tol, max_steps)


def test_quadratic_reaches_the_closed_form_minimiser_and_reports_its_gradient(x64):
    rng = np.random.default_rng(0)
    M = rng.normal(size=(8, 8))
    A, b = M @ M.T + np.eye(8), rng.normal(size=8)

    def loss(p):  # a pytree, as the trainers pass
        x = jnp.concatenate([p["u"], p["v"]])
        return 0.5 * x @ jnp.asarray(A) @ x - jnp.asarray(b) @ x

    x0 = {"u": jnp.zeros(3), "v": jnp.zeros(5)}
    x, steps, gnorm = _run(loss, x0, 1e-10, 500)
    # the stopping step does not move and is not counted: capping at the reported steps gives x
    capped, _, _ = _run(loss, x0, 1e-10, int(steps))
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15), capped, x)
    assert float(_run(loss, x0, 1e-10, int(steps) - 1)[2]) > 1e-10  # one step fewer is not there yet
    x = np.concatenate([x["u"], x["v"]])
    # the reported norm is the gradient at the returned point, recomputed here in numpy
    np.testing.assert_allclose(float(gnorm), np.linalg.norm(A @ x - b), rtol=1e-3)
    assert np.linalg.norm(A @ x - b) <= 1e-10
    np.testing.assert_allclose(x, np.linalg.solve(A, b), atol=1e-10)
    assert 0 < int(steps) < 500


def test_step_cap_is_reported_with_the_gradient_it_left(x64):
    def rosenbrock(x):
        return jnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    x, steps, gnorm = _run(rosenbrock, -jnp.ones(6), 1e-10, 5)
    assert int(steps) == 5 and float(gnorm) > 1e-10
    np.testing.assert_allclose(float(gnorm), np.linalg.norm(jax.grad(rosenbrock)(x)), rtol=1e-12)
