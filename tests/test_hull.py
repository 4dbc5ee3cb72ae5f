"""Wolfe's minimum-norm point against an independent QP solver (quadprog, Goldfarb-Idnani)."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import quadprog
from conftest import random_configuration
from scipy.optimize import linprog

import gnc_jax
from gnc_jax._src import hull

# These tests call JAX internals directly (float64 scoped to each test, as the public API does).
pytestmark = pytest.mark.usefixtures("x64")


def reference_distance(W, k):
    """dist(w_k, conv{w_j : j != k}) from the dual QP min 1/2 ||h||^2 s.t. <w_k - w_j, h> >= 1:
    dist = 1 / ||h*||; the QP is infeasible exactly when the distance is 0. Only quadprog's
    infeasibility verdict reads as 0, and only once an LP confirms that w_k is a convex combination
    of the others; any other quadprog failure is an error of the reference."""
    P = W[:, [k]] - np.delete(W, k, axis=1)
    d = W.shape[0]
    try:
        h = quadprog.solve_qp(np.eye(d), np.zeros(d), P, np.ones(P.shape[1]))[0]
    except ValueError as e:
        if "inconsistent" not in str(e):
            raise
        others = np.delete(W, k, axis=1)
        A_eq = np.vstack([others, np.ones((1, others.shape[1]))])
        lp = linprog(np.zeros(others.shape[1]), A_eq=A_eq, b_eq=np.append(W[:, k], 1.0), bounds=(0, None))
        assert lp.status == 0, f"quadprog says infeasible but w_{k} is not in the hull of the rest"
        return 0.0
    return 1.0 / np.linalg.norm(h)


def check_against_reference(W):
    sep = gnc_jax.separation(W)
    Wn = W / np.linalg.norm(W, axis=0)
    ref = np.array([reference_distance(Wn, k) for k in range(W.shape[1])])
    np.testing.assert_allclose(np.asarray(sep.distances), ref, rtol=0, atol=1e-9)
    assert float(sep.certificate_gap) <= 1e-12
    assert float(sep.rho_one_vs_rest) == pytest.approx(ref.min(), abs=1e-9)
    # The weights are convex combinations that reproduce the distances.
    V = np.asarray(sep.weights)
    assert np.all(V >= 0) and np.allclose(V.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(np.diag(V) == 0)
    np.testing.assert_allclose(np.linalg.norm(Wn - Wn @ V.T, axis=0), sep.distances, atol=1e-12)


@pytest.mark.parametrize(
    "d,K",
    [(2, 3), (2, 17), (3, 5), (4, 4), (8, 9), (16, 10)]
    + [
        pytest.param(d, K, marks=pytest.mark.slow)
        for d, K in [(3, 40), (5, 60), (8, 120), (12, 30), (16, 200)]
    ],
)
def test_random_configurations_match_quadprog(d, K):
    check_against_reference(random_configuration(1000 * d + K, d, K))


def test_degenerate_duplicated_points():
    W = random_configuration(1, 3, 8)
    W[:, 5] = W[:, 2]  # a duplicated point: both have distance 0
    check_against_reference(W)
    dist = gnc_jax.one_vs_rest_distances(W)
    assert dist[2] <= 1e-12 and dist[5] <= 1e-12


def test_degenerate_antipodal_pairs():
    W = random_configuration(2, 4, 6)
    W[:, 1] = -W[:, 0]
    W[:, 3] = -W[:, 2]
    check_against_reference(W)


def test_degenerate_points_on_a_great_circle():
    t = np.random.default_rng(3).uniform(0, 2 * np.pi, 9)
    W = np.zeros((5, 9))
    W[0], W[1] = np.cos(t), np.sin(t)
    check_against_reference(W)


def test_degenerate_point_inside_hull():
    # On the sphere no point lies strictly inside the hull of others, so use raw points: column 0 is
    # a convex combination of three others (distance 0); the rest are unit vectors.
    W = random_configuration(4, 3, 12)
    W[:, 0] = 0.2 * W[:, 3] + 0.3 * W[:, 7] + 0.5 * W[:, 9]
    dist = np.asarray(gnc_jax._src.geometry._separation(jnp.asarray(W), jnp.ones(12, bool)).distances)
    ref = np.array([reference_distance(W, k) for k in range(12)])
    assert ref[0] == 0.0 and dist[0] <= 1e-12
    np.testing.assert_allclose(dist, ref, atol=1e-9)


def test_min_norm_point_simple_polytopes():
    # Segment from (1, -1) to (1, 1): minimum-norm point (1, 0) with weights (1/2, 1/2).
    P = jnp.array([[1.0, 1.0], [-1.0, 1.0]])
    r = hull.min_norm_point(P, jnp.array([True, True]))
    np.testing.assert_allclose(r.x, [1.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(r.weights, [0.5, 0.5], atol=1e-15)
    # A triangle containing the origin: distance 0.
    P = jnp.array([[1.0, -1.0, 0.0], [0.0, 0.0, 1.0]]) - jnp.array([[0.0], [0.5]])
    r = hull.min_norm_point(P, jnp.ones(3, bool))
    assert float(jnp.linalg.norm(r.x)) <= 1e-15
    # Masked points are ignored.
    P = jnp.array([[1.0, 0.1], [0.0, 0.0]])
    r = hull.min_norm_point(P, jnp.array([True, False]))
    np.testing.assert_allclose(r.x, [1.0, 0.0])


@pytest.mark.parametrize("d,K", [(3, 7), (4, 12), (6, 20)])
def test_envelope_gradient_matches_finite_differences(d, K):
    W = random_configuration(d * K, d, K)
    sep = gnc_jax.separation(W)
    weights = np.asarray(sep.weights)

    def dist_k(Wf, k):
        return gnc_jax._src.geometry.distances_envelope(Wf, weights)[k]

    rng = np.random.default_rng(0)
    for k in range(0, K, 3):
        grad = np.asarray(jax.grad(dist_k)(jnp.asarray(W), k))
        # Directional derivative of the exact distance (re-solving the QP) along a random direction.
        V = rng.standard_normal((d, K))
        eps = 1e-6
        plus = gnc_jax._src.geometry._separation(jnp.asarray(W + eps * V), jnp.ones(K, bool)).distances[k]
        minus = gnc_jax._src.geometry._separation(jnp.asarray(W - eps * V), jnp.ones(K, bool)).distances[k]
        fd = (float(plus) - float(minus)) / (2 * eps)
        assert np.sum(grad * V) == pytest.approx(fd, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize(
    "d,K,candidates",
    [(20, 150, 16)] + [pytest.param(*c, marks=pytest.mark.slow) for c in [(8, 300, 8), (3, 200, 4)]],
)
def test_screened_column_generation_matches_the_full_qps(d, K, candidates):
    # Few candidates force several rounds (support kept, candidates doubled) before certification.
    W = random_configuration(7 * d + K, d, K)
    full = jax.jit(hull.one_vs_rest)(jnp.asarray(W), jnp.ones(K, bool))
    scr = hull.one_vs_rest_screened(W, candidates=candidates, chunk=32)
    np.testing.assert_allclose(np.linalg.norm(scr.x, axis=1), np.linalg.norm(full.x, axis=1), atol=1e-12)
    np.testing.assert_allclose(scr.weights.toarray(), full.weights, atol=1e-9)
    assert np.diff(scr.weights.indptr).max() <= d + 1  # sparse rows: a support has <= d + 1 points
    assert float(jnp.max(scr.gap)) <= 1e-12
    sub = hull.one_vs_rest_screened(W, classes=[5, 0, 17], candidates=candidates)
    np.testing.assert_allclose(sub.x, np.asarray(full.x)[[5, 0, 17]], atol=1e-12)


def test_gram_form_matches_least_squares():
    W = random_configuration(11, 12, 80)
    P = jnp.asarray(W[:, [0]] - W[:, 1:])
    a = hull.min_norm_point(P, jnp.ones(79, bool))
    b = hull.min_norm_point(P, jnp.ones(79, bool), gram=True)
    np.testing.assert_allclose(b.x, a.x, atol=1e-13)
    assert float(b.gap) <= 1e-13


@pytest.mark.slow
def test_gram_form_stall_is_caught_and_certified():
    # A d = 8, K = 1000 softmax code from the solver (seed 0): for classes 28 and 983 the Gram form
    # stalls near 1e-13, keeps adding nearly dependent points and its affine solve returned NaN,
    # which left these classes uncertified (rho reported as 0 with an infinite gap).
    W = np.load(Path(__file__).parent / "data" / "softmax_code_d8_K1000.npy")
    K = W.shape[1]
    for k in (28, 983):
        P = jnp.asarray(W[:, [k]] - W)
        valid = jnp.asarray(np.arange(K) != k)
        ref = hull.min_norm_point(P, valid)  # least squares in coordinates
        g = hull.min_norm_point(P, valid, gram=True)
        assert np.all(np.isfinite(g.x)) and 0 <= float(g.gap) <= 1e-12
        assert float(jnp.linalg.norm(g.x)) == pytest.approx(float(jnp.linalg.norm(ref.x)), abs=1e-12)
    scr = hull.one_vs_rest_screened(W, classes=[28, 983, 0])
    assert float(jnp.max(scr.gap)) <= 1e-12
    ref_dist = [reference_distance(W, k) for k in (28, 983, 0)]
    np.testing.assert_allclose(np.linalg.norm(scr.x, axis=1), ref_dist, atol=1e-9)
