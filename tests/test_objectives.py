"""Smoothed objectives: the one-exponential gradient, the smoothing bound, padding, analytic term grads."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random_configuration

import gnc_jax
from gnc_jax._src.objectives import PROBLEMS, Problem, get_problem

# These tests call JAX internals directly (float64 scoped to each test, as the public API does).
pytestmark = pytest.mark.usefixtures("x64")


def _params(problem, seed, d, K, d_max=None, K_max=None):
    """Random unpadded variables, optionally embedded in zeros of shape (d_max, K_max)."""
    d_max, K_max = d_max or d, K_max or K
    out = {}
    for i, name in enumerate(problem.variables):
        X = np.zeros((d_max, K_max))
        X[0, :] = 1.0  # padded columns: e_1, as sphere.padded_points makes them
        X[:d, :K] = random_configuration(seed + i, d, K)
        out[name] = jnp.asarray(X)
    return out, jnp.arange(K_max) < K


@pytest.mark.parametrize("name", sorted(PROBLEMS))
@pytest.mark.parametrize("t", [0.3, 1e-2, 1e-5])
def test_value_and_grad_matches_autodiff_of_the_loss(name, t):
    problem = get_problem(name)
    params, col_mask = _params(problem, 1, 4, 9, d_max=6, K_max=12)
    offsets = problem.smoothing_offsets(col_mask)
    value, grad = problem.value_and_grad(params, offsets, t)
    ref_value, ref_grad = jax.value_and_grad(problem.loss)(params, offsets, t)
    np.testing.assert_allclose(value, ref_value, rtol=1e-13, atol=1e-15)
    for k in params:
        np.testing.assert_allclose(grad[k], ref_grad[k], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_gradient_matches_finite_differences(name):
    problem = get_problem(name)
    params, col_mask = _params(problem, 2, 3, 7)
    offsets = problem.smoothing_offsets(col_mask)
    t, h = 0.05, 1e-6
    _, grad = problem.value_and_grad(params, offsets, t)
    rng = np.random.default_rng(0)
    for k in params:
        direction = rng.standard_normal(params[k].shape)
        up = dict(params, **{k: params[k] + h * direction})
        down = dict(params, **{k: params[k] - h * direction})
        fd = (problem.loss(up, offsets, t) - problem.loss(down, offsets, t)) / (2 * h)
        np.testing.assert_allclose(np.sum(grad[k] * direction), fd, rtol=1e-7)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
@pytest.mark.parametrize("t", [1.0, 1e-3])
def test_smoothing_brackets_the_exact_max(name, t):
    """max z <= loss <= max z + t log(#terms); #terms = K(K-1)/2 if symmetric (the smoothing over
    every ordered pair, less t log 2), else K(K-1)."""
    problem = get_problem(name)
    K = 10
    params, col_mask = _params(problem, 3, 3, K, d_max=4, K_max=16)
    offsets = problem.smoothing_offsets(col_mask)
    exact_max = -problem.score(params, col_mask)
    n_terms = K * (K - 1) // (2 if problem.symmetric else 1)
    assert int(np.sum(np.isfinite(offsets))) == K * (K - 1)
    loss = problem.loss(params, offsets, t)
    assert exact_max <= loss <= exact_max + t * np.log(n_terms) + 1e-15


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_padding_changes_nothing(name):
    problem = get_problem(name)
    small, m_small = _params(problem, 4, 3, 8)
    big, m_big = _params(problem, 4, 3, 8, d_max=6, K_max=16)
    for t in (0.1, 1e-4):
        v_small, g_small = problem.value_and_grad(small, problem.smoothing_offsets(m_small), t)
        v_big, g_big = problem.value_and_grad(big, problem.smoothing_offsets(m_big), t)
        np.testing.assert_allclose(v_big, v_small, rtol=1e-14)
        for k in small:
            np.testing.assert_allclose(g_big[k][:3, :8], g_small[k], rtol=1e-12, atol=1e-15)
            np.testing.assert_array_equal(g_big[k][3:, :], 0.0)
    np.testing.assert_allclose(problem.score(big, m_big), problem.score(small, m_small), rtol=1e-15)


def test_scores_are_the_certified_margins():
    """Tammes score = -max_cos; softmax-code score <= rho_one-vs-rest, with equality at eq. (9) features."""
    W = random_configuration(5, 3, 5)
    cm = jnp.ones(5, bool)
    tammes = get_problem("tammes")
    np.testing.assert_allclose(-tammes.score({"W": jnp.asarray(W)}, cm), gnc_jax.max_cos(W), rtol=1e-15)
    code = get_problem("softmax-code")
    rho = gnc_jax.softmax_code_margin(W)
    assert rho > 0  # 5 random points in R^3 are in convex position almost surely
    H = gnc_jax.optimal_features(W)
    np.testing.assert_allclose(code.score({"W": jnp.asarray(W), "H": jnp.asarray(H)}, cm), rho, rtol=1e-10)
    H_random = random_configuration(6, 3, 5)
    assert code.score({"W": jnp.asarray(W), "H": jnp.asarray(H_random)}, cm) <= rho + 1e-15


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_analytic_term_gradients_match_jax(name):
    """The host-side term gradients used by the LP polish agree with autodiff of ``terms``."""
    problem = get_problem(name)
    params, _ = _params(problem, 7, 4, 6)
    rows, cols = np.array([0, 1, 5, 3]), np.array([2, 0, 4, 5])
    analytic = problem.term_grads({k: np.asarray(v) for k, v in params.items()}, rows, cols)
    jac = jax.jacobian(problem.terms)(params)
    for k in params:
        np.testing.assert_allclose(analytic[k], np.asarray(jac[k])[rows, cols], rtol=1e-13, atol=1e-15)


def test_unknown_problem_is_named():
    with pytest.raises(ValueError, match="problem must be one of"):
        get_problem("kissing")


@pytest.mark.parametrize("name", ["tammes", "softmax-code"])
def test_init_keeps_the_requested_dtype_when_the_pair_is_traced(name):
    """Inside a bucket's compiled call d and K are traced int64: no variable may come out float64
    when float32 was asked for (a float64 H made every float32 softmax-code step a float64 one)."""
    problem = get_problem(name)
    init = jax.jit(lambda key, d, K: problem.init(key, d, K, 6, 12, jnp.float32)[0])
    params = init(jax.random.PRNGKey(0), jnp.int64(5), jnp.int64(10))
    assert {k: v.dtype for k, v in params.items()} == {k: jnp.dtype("float32") for k in problem.variables}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tammes", "softmax-code", "hardmax"])
@pytest.mark.parametrize("block", [5, 16, 64])
def test_the_terms_in_column_blocks_give_the_dense_loss_gradient_and_score(name, block):
    """Blocks that do not divide the columns, padding, a running max that rises across blocks, and
    a temperature small enough that the first blocks' exponentials underflow against the last."""
    problem = get_problem(name, n=2)
    n = problem.features_per_class
    params, col_mask = _params(problem, 3, 4, 9, d_max=6, K_max=12)
    if n > 1:  # two features per class: H (6, 24) from the class's w_k plus noise
        H = np.repeat(np.asarray(params["W"]), n, axis=1) + 0.3 * np.random.default_rng(4).normal(
            size=(6, 24)
        )
        params["H"] = jnp.asarray(H / np.linalg.norm(H, axis=0))
    offsets = problem.smoothing_offsets(col_mask)
    for t in (0.3, 1e-3):
        value, grad = problem.value_and_grad(params, offsets, t)
        blocks = jax.jit(lambda p, t: problem.value_and_grad_blocks(p, col_mask, t, block))
        bvalue, bgrad = blocks(params, t)
        np.testing.assert_allclose(bvalue, value, rtol=1e-14, atol=1e-15)
        for k in params:
            np.testing.assert_allclose(bgrad[k], grad[k], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(
        problem.score_blocks(params, col_mask, block), problem.score(params, col_mask), atol=1e-15
    )


@pytest.mark.slow
def test_pairs_too_large_for_the_dense_terms_are_solved_in_blocks(monkeypatch):
    from gnc_jax._src import sphere

    assert sphere.term_block(1, 10_240, 10_240) == 0  # every pair up to K = 10^4 stays dense
    assert sphere.term_block(1, 100_000, 100_000) == 2048 and sphere.term_block(8, 12, 12) == 0
    monkeypatch.setattr(sphere, "DENSE_MAX_TERMS", 20)
    monkeypatch.setattr(sphere, "MIN_BLOCK", 4)
    assert sphere.term_block(1, 4, 4) == 0 and sphere.term_block(2, 7, 7) == 4
    traced = []
    blocks = Problem.value_and_grad_blocks
    monkeypatch.setattr(Problem, "value_and_grad_blocks", lambda *a: traced.append(a[-1]) or blocks(*a))
    jax.clear_caches()  # the solvers compiled with the dense terms
    try:
        s = gnc_jax.SolverSettings(restarts=2, steps=400, hop_rounds=0, polish_steps=200)
        octahedron = gnc_jax.solve_tammes(3, 6, seed=0, solver=s)
        simplex = gnc_jax.solve_softmax_code(3, 4, seed=0, solver=s)
    finally:
        jax.clear_caches()
    assert traced and set(traced) == {4}  # both solves ran on blocks of 4 columns
    assert octahedron.max_cos == pytest.approx(0.0, abs=1e-9)  # the octahedron's
    assert simplex.rho_one_vs_rest == pytest.approx(4 / 3, abs=1e-9)  # Theorem 3.3: K / (K - 1)
