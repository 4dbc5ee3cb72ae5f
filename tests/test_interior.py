"""The interior-point solve to a local Tammes optimum (gnc_jax._src.interior).

References: closed forms (regular polygon, icosahedron, 24-cell) and the exact SLP polish of
gnc_jax._src.polish as a second method (it finds no ascent from a local optimum)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random_configuration

from gnc_jax._src.driver import geometric, retract, riemannian_adam, run_schedule
from gnc_jax._src.geometry import tammes_margin
from gnc_jax._src.interior import interior_point
from gnc_jax._src.objectives import TAMMES
from gnc_jax._src.polish import polish

pytestmark = pytest.mark.usefixtures("x64")


def perturbed(W, scale, seed=0):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((W.shape[0],) * 2))  # a random orthogonal map
    W = Q @ W + scale * rng.standard_normal(W.shape)
    return W / np.linalg.norm(W, axis=0)


def icosahedron():
    p = (1 + 5**0.5) / 2
    V = [(0, s1, s2 * p) for s1 in (-1, 1) for s2 in (-1, 1)]
    V = [v[i:] + v[:i] for v in V for i in range(3)]  # the cyclic permutations
    W = np.array(V, float).T
    return W / np.linalg.norm(W, axis=0)


def cell24():
    W = [v for v in itertools.product((-1, 0, 1), repeat=4) if sum(map(abs, v)) == 2]
    return np.array(W, float).T / 2**0.5


def solved(W, iterations=80):
    return np.asarray(jax.jit(interior_point, static_argnums=1)(jnp.asarray(W), iterations))


def max_cos(W):
    return float(np.max(W.T @ W - 2 * np.eye(W.shape[1])))


@pytest.mark.parametrize(
    "name, W, cos",
    [
        (
            "heptagon",
            np.stack([np.cos(2 * np.pi * np.arange(7) / 7), np.sin(2 * np.pi * np.arange(7) / 7)]),
            np.cos(2 * np.pi / 7),
        ),
        ("icosahedron", icosahedron(), 5**-0.5),
        ("24-cell", cell24(), 0.5),
    ],
)
def test_a_perturbed_optimum_returns_to_its_closed_form(name, W, cos):
    start = perturbed(W, 1e-3)
    assert max_cos(start) > cos + 1e-5  # the perturbation is felt
    assert max_cos(solved(start)) == pytest.approx(cos, abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("K", [20, 40])
def test_the_result_is_a_local_optimum_that_the_slp_polish_cannot_improve(K):
    # From the end of a short anneal (the search's finish leaves members 1e-6..2e-4 below their local
    # optimum), the solve ends at a local optimum: the exact polish, a second method, finds no ascent.
    col = jnp.ones(K, bool)
    offsets = TAMMES.smoothing_offsets(col)
    temps = geometric(0.1, 1e-6, 1500)
    start = run_schedule(
        lambda p, t: TAMMES.value_and_grad(p, offsets, t),
        {"W": jnp.asarray(random_configuration(K, 3, K))},
        riemannian_adam({"W": col}),
        retract,
        temps,
        0.5 * temps,
    ).params["W"]
    W = solved(np.asarray(start))
    chord = tammes_margin(W)
    assert chord > tammes_margin(np.asarray(start)) * (1 + 1e-7)
    assert tammes_margin(polish(TAMMES, {"W": W}).params["W"]) <= chord * (1 + 1e-10)


def test_a_batch_is_solved_as_each_member_alone():
    batch = np.stack([perturbed(icosahedron(), 2e-3, seed) for seed in range(3)])
    together = np.asarray(jax.jit(jax.vmap(lambda W: interior_point(W, 40)))(jnp.asarray(batch)))
    for W, Y in zip(batch, together):
        # The same configuration up to a rotation (the optimum's free directions, which rounding
        # differences of the batched factorisation move along): the same Gram matrix and chord.
        alone = solved(W, 40)
        np.testing.assert_allclose(Y.T @ Y, alone.T @ alone, atol=1e-9)
        assert tammes_margin(Y) == pytest.approx(tammes_margin(alone), rel=1e-12)


def test_padded_points_are_in_no_constraint_and_stay_put():
    # Pairs of several sizes share one program padded to K_max: a (3, 12) configuration with 4
    # padded columns, some of them on top of real points (where, unmasked, they would be the
    # closest pair by far), ends at the same local optimum as alone, the padding untouched.
    W = perturbed(icosahedron(), 2e-3, seed=5)
    pad = np.concatenate([W[:, :2], perturbed(icosahedron(), 0.3, seed=6)[:, :2]], axis=1)
    padded = np.concatenate([W, pad], axis=1)
    col = jnp.arange(16) < 12
    run = jax.jit(lambda X, col: interior_point(X, 80, col=col))
    Y = np.asarray(run(jnp.asarray(padded), col))
    np.testing.assert_allclose(Y[:, 12:], pad, atol=1e-15)  # renormalised only
    alone = solved(W)
    np.testing.assert_allclose(Y[:, :12].T @ Y[:, :12], alone.T @ alone, atol=1e-9)
    assert tammes_margin(Y[:, :12]) == pytest.approx(tammes_margin(alone), rel=1e-12)
    assert tammes_margin(alone) == pytest.approx(tammes_margin(icosahedron()), rel=1e-12)
