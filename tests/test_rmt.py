"""Large-dimensional softmax classifier, binary case (gnc_jax.related.rmt, paper 003)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gnc_jax.related import rmt

N, LAM, GAMMA = 400, 20.0, (1 / 3, 2 / 3)


def _fig2(p):
    """Fig. 2 of paper 003: C_1 = C_2 = I_p, ||mu_1|| = ||mu_2|| = 1/2, mu_1 orthogonal to mu_2."""
    mu = np.zeros((2, p))
    mu[0, 0] = mu[1, 1] = 0.5
    return mu, np.stack([np.eye(p)] * 2)


@pytest.mark.parametrize("p", [50, 200])
@pytest.mark.slow
def test_predicted_accuracy_matches_training_within_sampling_error(p):
    mu, C = _fig2(p)
    pred = rmt.predict_binary(mu, C, GAMMA, N, LAM)
    assert pred.status == "stationary" and pred.residual < 1e-12
    train, test, ws = [], [], []
    for s in range(12):
        X, y = rmt.sample_mixture(jax.random.key(s), mu, C, GAMMA, N)
        Xt, yt = rmt.sample_mixture(jax.random.key(100 + s), mu, C, GAMMA, 3000)
        fit = rmt.train_binary_softmax(X, y, LAM)
        assert fit.status == "stationary" and fit.grad_norm <= 1e-10
        w = fit.weights
        ws.append(w)
        train.append(np.asarray(GAMMA) @ rmt.binary_accuracy(w, X, y))
        test.append(np.asarray(GAMMA) @ rmt.binary_accuracy(w, Xt, yt))
    for emp, predicted in ((train, pred.overall_train_accuracy), (test, pred.overall_test_accuracy)):
        se = np.std(emp, ddof=1) / np.sqrt(len(emp))
        assert abs(np.mean(emp) - predicted) <= 3 * se + 1e-3, (np.mean(emp), predicted, se)
    # the weights are deterministic to O(n^-1/2): their average sits on R_1 mu~ along the means
    np.testing.assert_allclose(np.mean(ws, axis=0)[:2], pred.mean_w[:2], rtol=0.1)


def test_xi_solves_its_fixed_point_equation(x64):
    z = jnp.linspace(-3, 3, 11)
    for label in (0, 1):
        xi, dxi, converged = rmt._xi(label, z, 0.7, 2.0)
        assert converged
        f, df = rmt._f(label, z + 0.7 * xi, 2.0)
        np.testing.assert_allclose(xi, f, atol=1e-15)
        eps = 1e-6  # xi' against a central difference
        fd = (rmt._xi(label, z + eps, 0.7, 2.0)[0] - rmt._xi(label, z - eps, 0.7, 2.0)[0]) / (2 * eps)
        np.testing.assert_allclose(dxi, fd, atol=1e-8)


def test_singular_covariances_are_allowed_and_sampled_exactly():
    mu = np.eye(3)[:2] * 0.5
    C = np.stack([np.diag([1.0, 1.0, 0.0])] * 2)
    pred = rmt.predict_binary(mu, C, GAMMA, 50, 5.0)
    assert pred.status == "stationary" and np.all(np.isfinite(pred.sigma))
    X, _ = rmt.sample_mixture(jax.random.key(0), mu, C, GAMMA, 50)
    np.testing.assert_array_equal(X[2], 0.0)  # no variance along the null direction


def test_stronger_signal_or_regularisation_behaves_as_expected():
    mu, C = _fig2(100)
    base = rmt.predict_binary(mu, C, GAMMA, N, LAM)
    strong = rmt.predict_binary(2 * mu, C, GAMMA, N, LAM)
    assert strong.overall_test_accuracy > base.overall_test_accuracy
    more_data = rmt.predict_binary(mu, C, GAMMA, 4 * N, LAM)
    assert more_data.overall_train_accuracy < base.overall_train_accuracy  # less overfitting
    assert more_data.delta[0] == pytest.approx(base.delta[0] / 4, rel=0.05)  # delta = tr(C R1) / n


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"lam": 0.0}, "lam must be"),
        ({"proportions": (0.5, 0.6)}, "proportions must be"),
        ({"covs": np.stack([np.eye(3), -np.eye(3)])}, r"covs\[1\] must be symmetric positive semi-definite"),
        ({"covs": np.stack([np.eye(3), np.triu(np.ones((3, 3)))])}, "symmetric"),
        ({"means": np.zeros((3, 3))}, r"means must be \(2, p\)"),
        ({"n": 1}, "n must be >= 2"),
    ],
)
def test_bad_input_names_the_argument(kwargs, match):
    args = {
        "means": np.eye(3)[:2] * 0.5,
        "covs": np.stack([np.eye(3)] * 2),
        "proportions": GAMMA,
        "n": 50,
        "lam": 5.0,
    }
    with pytest.raises(ValueError, match=match):
        rmt.predict_binary(**(args | kwargs))


@pytest.mark.slow
def test_cli_prints_prediction_beside_training(capsys):
    import json

    from gnc_jax._src import cli

    assert cli.main(["rmt", "--p", "50", "--seeds", "3"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["status"] == "stationary" and row["residual"] < 1e-12 and row["p"] == 50
    assert abs(row["empirical_test_accuracy"] - row["predicted_test_accuracy"]) < 0.03
    assert row["empirical_fits_stationary"] == 3
    assert cli.main(["rmt", "--p", "50", "--proportion", "1"]) == 2
    assert "proportion must be in (0, 1)" in capsys.readouterr().err


def test_multiclass_fixed_point_reduces_to_the_binary_one():
    mu, C = _fig2(100)
    b = rmt.predict_binary(mu, C, GAMMA, N, LAM)
    g = rmt.predict_multiclass(mu, C, GAMMA, N, LAM, seed=0)
    assert g.status == "stationary" and g.residual < 1e-9
    # Monte Carlo (20000 draws per class) against Gauss-Hermite: the Monte Carlo standard error of an
    # accuracy near 0.8 is sqrt(0.8 * 0.2 / 40000) = 2e-3; measured differences 8.1e-4 (train) and
    # 1.6e-3 (test). Tolerance: 2.5 standard errors.
    assert g.overall_train_accuracy == pytest.approx(b.overall_train_accuracy, abs=5e-3)
    assert g.overall_test_accuracy == pytest.approx(b.overall_test_accuracy, abs=5e-3)
    # w = w_1 - w_2 and w_1 = -w_2
    np.testing.assert_allclose(g.mean_W[:, 0] - g.mean_W[:, 1], b.mean_w, atol=2e-3 * np.abs(b.mean_w).max())


@pytest.mark.slow
def test_three_classes_with_unequal_covariances_match_training():
    k, p = 3, 100
    gamma = np.array([0.2, 0.3, 0.5])
    mu = np.zeros((k, p))
    mu[0, 0] = mu[1, 1] = mu[2, 2] = 1.0
    C = np.stack([np.eye(p), 0.5 * np.eye(p), np.diag(np.linspace(0.5, 1.5, p))])
    pred = rmt.predict_multiclass(mu, C, gamma, N, LAM, seed=0)
    train, test = [], []
    for s in range(10):
        X, y = rmt.sample_multiclass(jax.random.key(s), mu, C, gamma, N)
        Xt, yt = rmt.sample_multiclass(jax.random.key(100 + s), mu, C, gamma, 6000)
        W = rmt.train_multiclass_softmax(X, y, LAM).weights
        train.append(gamma @ rmt.multiclass_accuracy(W, X, y))
        test.append(gamma @ rmt.multiclass_accuracy(W, Xt, yt))
    for emp, predicted in ((train, pred.overall_train_accuracy), (test, pred.overall_test_accuracy)):
        se = np.std(emp, ddof=1) / np.sqrt(len(emp))
        assert abs(np.mean(emp) - predicted) <= 3 * se + 5e-3, (np.mean(emp), predicted, se)


def test_multiclass_bad_input():
    mu, C = np.eye(4)[:3], np.stack([np.eye(4)] * 3)
    with pytest.raises(ValueError, match="proportions must be 3"):
        rmt.predict_multiclass(mu, C, (0.5, 0.5), 50, 5.0, seed=0)
    with pytest.raises(ValueError, match="lam must be > 0"):
        rmt.predict_multiclass(mu, C, (0.2, 0.3, 0.5), 50, [1.0, -1.0, 1.0], seed=0)
    with pytest.raises(ValueError, match=r"covs must be finite with shape \(k, p, p\)"):
        rmt.predict_multiclass(mu, C[:2], (0.2, 0.3, 0.5), 50, 5.0, seed=0)
    with pytest.raises(ValueError, match="give exactly one of key"):
        rmt.predict_multiclass(mu, C, (0.2, 0.3, 0.5), 50, 5.0)


@pytest.mark.parametrize("max_steps", [0, 2.5, "many"])
def test_trainers_refuse_a_step_cap_that_is_not_a_positive_integer(max_steps):
    X, labels = np.ones((3, 4)), np.array([0, 1, 0, 1])
    for train in (rmt.train_binary_softmax, rmt.train_multiclass_softmax):
        with pytest.raises(ValueError, match="max_steps"):
            train(X, labels, 1.0, max_steps=max_steps)
