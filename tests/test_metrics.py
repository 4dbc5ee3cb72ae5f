"""GNC metrics against direct computations, collapsed and ETF configurations, and bad input."""

import numpy as np
import pytest
from conftest import random_configuration

import gnc_jax
from gnc_jax._src import metrics


def _loop_gnc1(H, y, K, centred):
    """Sigma_W, Sigma_B summed feature by feature, pseudo-inverse by eigendecomposition."""
    d = H.shape[0]
    means = [H[:, y == k].mean(axis=1) for k in range(K)]
    sw = np.zeros((d, d))
    for i in range(H.shape[1]):
        r = H[:, i] - means[y[i]]
        sw += np.outer(r, r)
    sw /= H.shape[1]
    g = np.mean(means, axis=0) if centred else np.zeros(d)
    sb = sum(np.outer(m - g, m - g) for m in means) / K
    lam, V = np.linalg.eigh(sb)
    keep = lam > 1e-12 * lam.max()
    pinv = (V[:, keep] / lam[keep]) @ V[:, keep].T
    return np.trace(sw @ pinv) / K


@pytest.mark.parametrize("centred", [False, True])
@pytest.mark.parametrize("d,K,n", [(3, 5, 4), (6, 4, 3), (2, 7, 2)])
def test_gnc1_matches_a_direct_computation(d, K, n, centred):
    rng = np.random.default_rng(d * K + n)
    H = rng.standard_normal((d, n * K))
    y = metrics.class_major_labels(K, n)
    np.testing.assert_allclose(metrics.gnc1(H, y, centred=centred), _loop_gnc1(H, y, K, centred), rtol=1e-10)


def test_collapsed_self_dual_features_have_zero_gnc1_and_gnc3():
    W = gnc_jax.theory.simplex_etf(4, 5)
    H = np.repeat(W, 3, axis=1)
    y = metrics.class_major_labels(5, 3)
    rep = metrics.collapse_report(W, H, y)
    assert rep["gnc1"] < 1e-30 and abs(rep["gnc3"]) < 1e-15 and rep["ncc_accuracy"] == 1.0
    assert rep["nc2"] < 1e-14
    np.testing.assert_allclose(rep["gnc2"], gnc_jax.theory.softmax_code_closed_form(4, 5)[0], rtol=1e-12)
    # Rotate every class mean away from its classifier by the same angle: GNC3 = 1 - cos(angle).
    c, s = np.cos(0.3), np.sin(0.3)
    W2 = gnc_jax.theory.regular_polygon(6)
    R = np.array([[c, -s], [s, c]])
    assert metrics.gnc3(W2, R @ W2, np.arange(6)) == pytest.approx(1 - c, abs=1e-15)


def test_ncc_accuracy_counts_the_misassigned_features():
    means = np.array([[0.0, 10.0], [0.0, 0.0]])
    H = np.array([[0.1, 9.0, 6.0, 4.0], [0.0, 0.0, 0.0, 0.0]])
    y = np.array([0, 1, 0, 1])  # feature 2 is nearer class 1's mean, feature 3 nearer class 0's
    assert metrics.ncc_accuracy(H, y, means=means) == 0.5


@pytest.mark.parametrize("chunk", [3, 4096])
def test_ncc_accuracy_in_blocks_matches_the_distances_one_by_one(monkeypatch, chunk):
    monkeypatch.setattr(metrics, "NCC_CHUNK", chunk)
    rng = np.random.default_rng(0)
    means = rng.normal(size=(3, 6))
    H = rng.normal(size=(3, 40))
    y = rng.integers(0, 5, size=40)  # class 5 has no feature: allowed with given centres
    nearest = [np.argmin(np.linalg.norm(means - h[:, None], axis=0)) for h in H.T]
    expected = np.mean(np.array(nearest) == y)
    assert 0 < expected < 1
    assert metrics.ncc_accuracy(H, y, means=means) == expected
    with pytest.raises(ValueError, match="labels must lie in"):
        metrics.ncc_accuracy(H, np.full(40, 6), means=means)


def test_nc2_is_zero_only_for_the_simplex_etf():
    assert metrics.nc2_etf_distance(gnc_jax.theory.simplex_etf(5, 6)) < 1e-14
    assert metrics.nc2_etf_distance(random_configuration(0, 5, 6)) > 0.1
    with pytest.raises(ValueError, match="K <= d \\+ 1"):
        metrics.nc2_etf_distance(random_configuration(0, 3, 5))


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: metrics.gnc1(np.ones((3, 4)), np.array([0, 0, 1])), "labels"),
        (lambda: metrics.gnc1(np.full((3, 4), np.nan), np.array([0, 0, 1, 1])), "NaN"),
        (lambda: metrics.gnc1(np.ones((3, 4)), np.array([0, 0, 2, 2])), "classes \\[1\\]"),
        (lambda: metrics.gnc1(np.ones(4), np.array([0, 0, 1, 1])), "H must be"),
        (lambda: metrics.gnc3(np.eye(3), np.ones((2, 3)), np.arange(3)), "rows"),
        (lambda: metrics.gnc3(np.eye(3), np.ones((3, 3)), np.array([0, 1, 5])), "labels must lie"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_gnc1_ignores_round_off_in_directions_the_class_means_do_not_span():
    """K = 4 class means in R^5 span 3 dimensions; round-off-sized spread (1e-15) must give GNC1 ~ 1e-30,
    not O(1) from inverting Sigma_B's round-off eigenvalues."""
    W = gnc_jax.theory.simplex_etf(5, 4)
    rng = np.random.default_rng(0)
    H = np.repeat(W, 3, axis=1) + 1e-15 * rng.standard_normal((5, 12))
    assert metrics.gnc1(H, metrics.class_major_labels(4, 3)) < 1e-25
