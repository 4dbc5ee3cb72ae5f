"""UFM (eq. 2) in log space (C.2), its HardMax limit (Lemma 3.1), weight decay (B.1), bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import logsumexp
from conftest import known_tammes, random_configuration

import gnc_jax
from gnc_jax import UFMSettings
from gnc_jax._src import metrics
from gnc_jax._src.objectives import ufm_log_loss, ufm_mean_ce

TAUS = [0.5, 0.1, 0.02, 0.005]


def _params(seed, d, K, n):
    return {
        "W": jnp.asarray(random_configuration(seed, d, K)),
        "H": jnp.asarray(random_configuration(seed + 1, d, n * K)),
    }


def _direct_mean_ce(W, H, tau, n):
    """Eq. (2) written out with numpy: softmax cross-entropy of the logits W^T h / tau."""
    K = W.shape[1]
    logits = (W.T @ H) / tau
    y = metrics.class_major_labels(K, n)
    lse = np.log(np.sum(np.exp(logits - logits.max(axis=0)), axis=0)) + logits.max(axis=0)
    return np.mean(lse - logits[y, np.arange(len(y))])


def _direct_losses(W, H, tau, n):
    """Eq. (2) and eq. (C.2) with numpy, without cancellation: CE_c = log(1 + e^a_c), a_c the
    logsumexp of the other classes' logit gaps; log CE_c is about a_c where e^a_c underflows."""
    K = W.shape[1]
    y = metrics.class_major_labels(K, n)
    z = (W.T @ H - np.sum(np.repeat(W, n, axis=1) * H, axis=0)) / tau
    z[y, np.arange(len(y))] = -np.inf
    a = logsumexp(z, axis=0)
    log_ce = np.where(a > -30, np.log(np.log1p(np.exp(np.maximum(a, -30)))), a)
    return np.mean(np.log1p(np.exp(a))), tau * logsumexp(log_ce)


@pytest.mark.parametrize("tau", [2.0, 0.3, 0.05])
def test_losses_match_the_textbook_cross_entropy(tau, x64):
    p = _params(0, 4, 6, 3)
    cm = jnp.ones(6, bool)
    ce = _direct_mean_ce(np.asarray(p["W"]), np.asarray(p["H"]), tau, 3)
    np.testing.assert_allclose(ufm_mean_ce(p, cm, tau, 3), ce, rtol=1e-12)
    np.testing.assert_allclose(ufm_log_loss(p, cm, tau, 3), tau * np.log(18 * ce), rtol=1e-12)


@pytest.mark.slow
def test_log_loss_stays_finite_with_a_useful_gradient_where_the_ce_underflows(x64):
    # A well-separated configuration: at tau = 1e-3 every CE is exp(-(margin)/tau) ~ 1e-250 or less.
    W = gnc_jax.theory.simplex_etf(3, 4)
    p = {"W": jnp.asarray(W), "H": jnp.asarray(np.repeat(W, 2, axis=1))}
    cm = jnp.ones(4, bool)
    tau = 1e-3
    assert ufm_mean_ce(p, cm, tau, 2) == 0.0
    loss, g = jax.value_and_grad(ufm_log_loss)(p, cm, tau, 2)
    # log-space asymptotics: every CE_c = 3 exp(-4/3 / tau) to leading order, so L0 = tau log(8 * 3) - 4/3.
    np.testing.assert_allclose(loss, tau * np.log(24.0) - 4 / 3, rtol=1e-12)
    assert np.all(np.isfinite(g["W"])) and np.linalg.norm(g["W"]) > 0.1
    # Finite differences along a random direction.
    rng = np.random.default_rng(1)
    V = {k: jnp.asarray(rng.standard_normal(v.shape)) for k, v in p.items()}
    h = 1e-7
    up = {k: p[k] + h * V[k] for k in p}
    down = {k: p[k] - h * V[k] for k in p}
    fd = (ufm_log_loss(up, cm, tau, 2) - ufm_log_loss(down, cm, tau, 2)) / (2 * h)
    np.testing.assert_allclose(sum(jnp.sum(g[k] * V[k]) for k in p), fd, rtol=1e-6)


@pytest.fixture(scope="module")
def lemma_3_1():
    return gnc_jax.solve_ufm(
        3, 7, [1, 4], TAUS, seed=0, solver=UFMSettings(restarts=4, steps=1500, hold_steps=1500)
    )


@pytest.mark.slow
def test_lemma_3_1_min_angle_converges_to_the_hardmax_value(lemma_3_1):
    """Fig. C.1: the max cosine of W decreases to the HardMax (= Tammes, for (3, 7)) value as tau -> 0."""
    target = next(r["cos"] for r in known_tammes() if (r["d"], r["K"]) == (3, 7))
    for n in (1, 4):
        cos = [s.max_cos for s in lemma_3_1 if s.n == n]
        gaps = np.array(cos) - target
        assert np.all(gaps > -1e-9), gaps  # the Tammes optimum bounds every configuration
        assert np.all(np.diff(gaps) < 0), gaps
        assert gaps[-1] < 3e-3 and gaps[-1] < 0.5 * gaps[-2]


def test_ufm_solutions_are_stationary_and_collapsed(lemma_3_1):
    for s in lemma_3_1:
        assert s.status == "stationary" and s.grad_norm <= 1e-6, s.summary()
        assert s.gnc1 < 1e-9 and abs(s.gnc3) < 1e-5 and s.ncc_accuracy == 1.0
        # the reported losses are eq. (2) and eq. (C.2) of the returned (W, H), recomputed with numpy
        # (the log-space form where the mean CE underflows at small tau)
        ce, log_loss = _direct_losses(s.W, s.H, s.tau, s.n)
        np.testing.assert_allclose([s.loss, s.log_loss], [ce, log_loss], rtol=1e-9)


def test_same_seed_same_answer_and_batch_independence(lemma_3_1):
    small = UFMSettings(restarts=4, steps=1500, hold_steps=1500)
    again = gnc_jax.solve_ufm(3, 7, 4, 0.1, seed=0, solver=small)
    batched = next(s for s in lemma_3_1 if s.n == 4 and s.tau == 0.1)
    np.testing.assert_allclose(again.log_loss, batched.log_loss, rtol=1e-12)
    np.testing.assert_array_equal(again.W, gnc_jax.solve_ufm(3, 7, 4, 0.1, seed=0, solver=small).W)


@pytest.mark.slow
def test_weight_decay_ufm_reaches_the_simplex_etf_for_k_le_d_plus_1():
    """Eq. (B.1) with K <= d + 1: the regularised UFM collapses to a simplex ETF (Zhu et al., 2021),
    and at any stationary point of a loss of W^T H plus (lambda/2)(||W||^2 + ||H||^2) the two
    Frobenius norms balance, so with n features per class ||h|| = ||w|| / sqrt(n)."""
    s = gnc_jax.solve_ufm(4, 5, 2, 1.0, weight_decay=5e-3, seed=0, solver=UFMSettings(restarts=2))
    assert s.status == "stationary"
    assert np.isnan(s.log_loss)
    assert s.gnc1 < 1e-8 and metrics.nc2_etf_distance(s.W) < 1e-5
    w, h = np.linalg.norm(s.W, axis=0), np.linalg.norm(s.H, axis=0)
    np.testing.assert_allclose(w, w.mean(), rtol=1e-5)
    np.testing.assert_allclose(h, w.mean() / np.sqrt(2), rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(tau=0.0), "tau"),
        (dict(tau=[0.1, -1.0]), "tau"),
        (dict(tau=float("nan")), "tau"),
        (dict(tau=[]), "tau is empty"),
        (dict(n=0), "n must be >= 1"),
        (dict(weight_decay=-1e-3), "weight_decay"),
        (dict(d=1), "d must be >= 2"),
        (dict(solver=dict(restarts=4)), "solver must be UFMSettings"),
        (dict(seed=None), "exactly one of key"),
    ],
)
def test_bad_input_names_the_argument(kwargs, match):
    args = dict(d=3, K=4, n=1, tau=0.1, seed=0) | kwargs
    with pytest.raises(ValueError, match=match):
        gnc_jax.solve_ufm(**args)


@pytest.mark.parametrize("fields, match", [({"restarts": 0}, "restarts"), ({"tau_start": -1.0}, "tau_start")])
def test_bad_settings_name_the_field(fields, match):
    with pytest.raises(ValueError, match=match):
        UFMSettings(**fields)
