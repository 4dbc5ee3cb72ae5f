"""Exact measures: invariances, small angles, bounds between measures, eq. (9), bad input."""

import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random_configuration
from hypothesis import given, settings
from hypothesis import strategies as st

import gnc_jax
from gnc_jax._src import geometry, sphere


def random_rotation(rng, d):
    Q, R = np.linalg.qr(rng.standard_normal((d, d)))
    return Q * np.sign(np.diag(R))


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.sampled_from([2, 3, 5]), K=st.sampled_from([4, 7, 11]))
def test_rotation_and_permutation_invariance(seed, d, K):
    rng = np.random.default_rng(seed)
    W = random_configuration(seed, d, K)
    perm = rng.permutation(K)
    W2 = random_rotation(rng, d) @ W[:, perm]
    a, b = gnc_jax.separation(W), gnc_jax.separation(W2)
    np.testing.assert_allclose(np.asarray(b.distances), np.asarray(a.distances)[perm], atol=1e-12)
    assert float(b.min_angle_deg) == pytest.approx(float(a.min_angle_deg), abs=1e-9)
    assert float(b.max_cos) == pytest.approx(float(a.max_cos), abs=1e-13)


@pytest.mark.parametrize("seed", range(5))
def test_one_vs_rest_dominates_one_minus_max_cos(seed):
    # dist(w_k, conv rest) >= <w_k, w_k - p> = 1 - <w_k, p> >= 1 - max_j <w_k, w_j> for every k.
    W = random_configuration(seed, 4, 15)
    dist = gnc_jax.one_vs_rest_distances(W)
    G = W.T @ W - 2 * np.eye(15)
    assert np.all(dist >= 1 - G.max(axis=1) - 1e-12)
    assert gnc_jax.softmax_code_margin(W) >= 1 - gnc_jax.max_cos(W) - 1e-12


def test_min_angle_accurate_for_tiny_angles():
    eps = 1e-9  # radians; arccos(cos(eps)) would lose ~half the digits
    W = np.array([[1.0, np.cos(eps), -1.0], [0.0, np.sin(eps), 0.0]])
    assert gnc_jax.min_angle_deg(W) == pytest.approx(np.degrees(eps), rel=1e-6)
    assert gnc_jax.tammes_margin(W) == pytest.approx(2 * np.sin(eps / 2), rel=1e-6)


def test_columns_are_normalised():
    W = random_configuration(0, 3, 6)
    np.testing.assert_allclose(
        gnc_jax.one_vs_rest_distances(W * np.array([1, 2, 3, 4, 5, 6.0])), gnc_jax.one_vs_rest_distances(W)
    )


def test_optimal_features_of_simplex_are_the_weights():
    # For a simplex ETF the projection of w_k on the hull of the rest is -w_k/(K-1): eq. (9) gives h_k = w_k.
    W = gnc_jax.theory.simplex_etf(5, 6)
    np.testing.assert_allclose(gnc_jax.optimal_features(W), W, atol=1e-12)


def test_optimal_features_attain_the_distance():
    # eq. (9): min_{j != k} <w_k - w_j, h_k> = dist_k (minimax duality), and ||h_k|| = 1.
    W = random_configuration(7, 3, 9)
    H = gnc_jax.optimal_features(W)
    dist = gnc_jax.one_vs_rest_distances(W)
    np.testing.assert_allclose(np.linalg.norm(H, axis=0), 1.0, atol=1e-12)
    for k in range(9):
        margins = [(W[:, k] - W[:, j]) @ H[:, k] for j in range(9) if j != k]
        assert min(margins) == pytest.approx(dist[k], abs=1e-12)


def test_rattlers():
    # The octahedron has no rattlers; squeezing two vertices together leaves the others farther out.
    W = gnc_jax.theory.cross_polytope(3, 6)
    assert len(gnc_jax.rattlers(W)) == 0 and len(gnc_jax.rattlers(W, problem="tammes")) == 0
    W2 = W.copy()
    W2[:, 1] = np.array([0.9, 0.1, 0.0])  # near +e_1 (column 0)
    dist = gnc_jax.one_vs_rest_distances(W2)
    assert set(gnc_jax.rattlers(W2)) == set(np.flatnonzero(dist > dist.min() + 1e-6))
    assert set(gnc_jax.rattlers(W2, problem="tammes")) == {2, 3, 4, 5}
    with pytest.raises(ValueError, match="tol"):
        gnc_jax.rattlers(W, tol=-1)


@pytest.mark.parametrize(
    "W,match",
    [
        (np.ones(3), "shape"),
        (np.ones((1, 4)), "d >= 2"),
        (np.ones((3, 1)), "K >= 2"),
        (np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN"),
        (np.array([[1.0, np.inf], [0.0, 1.0]]), "NaN or inf"),
        (np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]), "zero columns"),
        ("abc", "W must be"),
    ],
)
def test_bad_configurations_raise_value_error_naming_w(W, match):
    for fn in (
        gnc_jax.one_vs_rest_distances,
        gnc_jax.softmax_code_margin,
        gnc_jax.min_angle_deg,
        gnc_jax.max_cos,
        gnc_jax.optimal_features,
    ):
        with pytest.raises(ValueError, match=match):
            fn(W)


def test_feature_lower_bounds_are_tight_at_eq9_features(x64):
    # Duality of eq. (3): any unit features give lower bounds, the features of eq. (9) attain them.
    W = random_configuration(5, 4, 30)
    sep = gnc_jax.separation(W)
    exact = np.asarray(sep.distances)
    tight = np.asarray(
        geometry.feature_lower_bounds(jnp.asarray(W), jnp.asarray(gnc_jax.optimal_features(W)))
    )
    np.testing.assert_allclose(tight, exact, atol=1e-12)
    loose = np.asarray(geometry.feature_lower_bounds(jnp.asarray(W), jnp.asarray(W)))
    assert np.all(loose <= exact + 1e-15) and np.max(exact - loose) > 1e-3
    assert float(sep.rho_lower) == pytest.approx(float(sep.rho_one_vs_rest), abs=1e-12)


@pytest.mark.parametrize("bounded", [False, True])
def test_large_k_paths_bracket_the_exact_margin(monkeypatch, bounded):
    # Shrink the thresholds so that small problems take the screened (and the bounded) path, with
    # W^T W in column blocks of 16 (90 = 5 x 16 + 10: the last block is padded).
    d, K = 6, 90
    W = random_configuration(9, d, K)
    exact = gnc_jax.separation(W)
    monkeypatch.setattr(geometry, "SCREEN_MIN_K", 40)
    monkeypatch.setattr(geometry, "EXACT_MAX_WORK", 0 if bounded else 3e5)
    monkeypatch.setattr(sphere, "DENSE_MAX_TERMS", 16 * K)
    monkeypatch.setattr(sphere, "MIN_BLOCK", 4)
    assert geometry._block(K) == 16
    sep = geometry.separation(W, directions=W + 0.05)
    for field in ("max_cos", "min_angle_deg", "rho_one_vs_one", "nearest_chords"):
        np.testing.assert_allclose(getattr(sep, field), getattr(exact, field), rtol=1e-14, atol=1e-15)
    assert gnc_jax.max_cos(W) == pytest.approx(float(exact.max_cos), abs=1e-15)
    assert gnc_jax.tammes_margin(W) == pytest.approx(float(exact.rho_one_vs_one), abs=1e-15)
    chords = np.asarray(exact.nearest_chords)
    far = np.flatnonzero(chords > chords.min() + 0.05)
    assert gnc_jax.rattlers(W, 0.05, "tammes").tolist() == far.tolist() and len(far)
    lower, dist = np.asarray(sep.lower_bounds), np.asarray(sep.distances)
    assert np.all(lower <= np.asarray(exact.distances) + 1e-12)
    assert float(sep.rho_lower) <= float(exact.rho_one_vs_rest) + 1e-12 <= float(sep.rho_one_vs_rest) + 2e-12
    known = np.isfinite(dist)
    np.testing.assert_allclose(dist[known], np.asarray(exact.distances)[known], atol=1e-12)
    assert known.sum() == (geometry.BOUNDED_CLASSES if bounded else K)
    weights = sep.weights.toarray()  # sparse: the QPs' rows, empty rows for the classes without one
    np.testing.assert_allclose(weights[known], np.asarray(exact.weights)[known], atol=1e-9)
    assert not weights[~known].any()
    # Every class's distance and feature of eq. (9), even where the margin is only bracketed.
    np.testing.assert_allclose(gnc_jax.one_vs_rest_distances(W), exact.distances, atol=1e-12)
    H = geometry.features_from_weights(W / np.linalg.norm(W, axis=0), np.asarray(exact.weights))
    np.testing.assert_allclose(gnc_jax.optimal_features(W), H, atol=1e-9)
    if not bounded:
        assert float(sep.rho_one_vs_rest) == pytest.approx(float(exact.rho_one_vs_rest), abs=1e-12)
    if bounded:  # directions that fit another configuration leave W's own bounds
        own = geometry.separation(W)
        unrelated = geometry.separation(W, directions=-W)
        assert float(unrelated.rho_lower) == float(own.rho_lower) > 0
    with pytest.raises(ValueError, match="directions"):
        geometry.separation(W, directions=W[:, :-1])
