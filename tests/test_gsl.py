"""Generalized softmax learning (gnc_jax.related.gsl, paper 004)."""

import jax
import numpy as np
import pytest

from gnc_jax.related import gsl


@pytest.fixture(scope="module")
def near():
    """|X| = 20, |Y| = 8, P close to P_X P_Y (epsilon = 1e-3), and a less close one (1e-2)."""
    return {eps: gsl.near_independent(jax.random.key(0), 20, 8, eps) for eps in (1e-3, 1e-2)}


def test_b_matrix_top_singular_pair_is_the_marginals(near):
    P = near[1e-2]
    U, S, Vt = np.linalg.svd(gsl.b_matrix(P))
    assert S[0] == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_allclose(np.abs(U[:, 0]), np.sqrt(P.sum(axis=1)), atol=1e-14)
    np.testing.assert_allclose(np.abs(Vt[0]), np.sqrt(P.sum(axis=0)), atol=1e-14)
    assert S[1] < 0.02


def test_near_independent_keeps_the_marginals(near):
    P = near[1e-3]
    ratio = P / np.outer(P.sum(axis=1), P.sum(axis=0))
    assert P.sum() == pytest.approx(1.0, abs=1e-15)
    assert np.abs(ratio - 1).max() == pytest.approx(1e-3, rel=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("model", gsl.MODELS)
def test_trained_features_span_the_svd_subspaces(near, model):
    P = near[1e-3]
    svd = gsl.svd_features(P, 2)
    r = gsl.train_softmax(P, 2, model, seed=0)
    # Measured (seed 0, every model): 5.2e-5 (f) and 1.1e-4 (g); 3x margin for the training's noise.
    assert gsl.principal_angles(r.f, svd.f, P.sum(axis=1)).max() <= 1.6e-4
    assert gsl.principal_angles(r.g, svd.g, P.sum(axis=0)).max() <= 3.4e-4


@pytest.mark.slow
def test_forward_reverse_and_joint_share_their_solution(near):
    P = near[1e-2]
    res = {m: gsl.train_softmax(P, 2, m, seed=1) for m in gsl.MODELS}
    ref = res["forward"]
    for m in ("reverse", "joint"):
        assert res[m].divergence == pytest.approx(ref.divergence, rel=1e-9)
        np.testing.assert_allclose(res[m].Q, ref.Q, atol=1e-12)
        assert gsl.principal_angles(res[m].f, ref.f, P.sum(axis=1)).max() < 1e-5
        assert gsl.principal_angles(res[m].g, ref.g, P.sum(axis=0)).max() < 1e-5


@pytest.mark.parametrize("model", gsl.MODELS)
def test_pythagorean_identity_and_stationarity_at_the_trained_q(near, model):
    P = near[1e-2]
    r = gsl.train_softmax(P, 2, model, seed=0)
    assert 0 < r.divergence < r.independence_divergence
    assert abs(r.pythagorean_residual) <= 1e-8 * r.independence_divergence
    assert max(r.stationarity.values()) < 1e-10
    assert r.status == "stationary" and r.grad_norm <= 1e-10


@pytest.mark.slow
def test_divergences_against_a_direct_computation():
    P = gsl.near_independent(jax.random.key(3), 6, 4, 0.5)
    r = gsl.train_softmax(P, 1, "forward", seed=0, max_steps=50)
    assert (r.status == "stationary") == (r.grad_norm <= 1e-10)
    capped = gsl.train_softmax(P, 1, "forward", seed=0, max_steps=2)
    assert capped.status == "max_steps" and capped.steps == 2 and capped.grad_norm > 1e-10
    px, py = P.sum(axis=1), P.sum(axis=0)
    assert r.divergence == pytest.approx(np.sum(P * np.log(P / r.Q)), abs=1e-13)
    assert r.independence_divergence == pytest.approx(np.sum(P * np.log(P / np.outer(px, py))), abs=1e-13)
    # the forward model's Q is P_X times a softmax over y of f g^T + b (b relative to log P_Y)
    logits = r.f @ r.g.T + r.b + np.log(py)
    cond = np.exp(logits - logits.max(axis=1, keepdims=True))
    np.testing.assert_allclose(r.Q, px[:, None] * cond / cond.sum(axis=1, keepdims=True), atol=1e-15)


@pytest.mark.slow
def test_full_rank_joint_model_reproduces_any_positive_p():
    P = gsl.near_independent(jax.random.key(4), 6, 4, 0.9)
    r = gsl.train_softmax(P, 3, "joint", seed=0)
    assert r.divergence < 1e-12 and np.abs(r.Q - P).max() < 1e-7


def test_same_seed_same_answer(near):
    a = gsl.train_softmax(near[1e-2], 2, "reverse", seed=5)
    b = gsl.train_softmax(near[1e-2], 2, "reverse", seed=5)
    np.testing.assert_array_equal(a.f, b.f)


@pytest.mark.parametrize("t", [1e-9, 1e-3, 0.7, 1.5])
def test_principal_angles_closed_form(t):
    # centred columns (sum 0), so the uniform-weight centring leaves them alone: the angle is t
    a = np.array([[1.0, -1.0, 0.0, 0.0]]).T
    b = np.array([[np.cos(t), -np.cos(t), np.sin(t), -np.sin(t)]]).T
    assert gsl.principal_angles(a, b)[0] == pytest.approx(t, rel=1e-12)
    if t > 1e-2:  # the same plane from its two spanning vectors in either order (well conditioned)
        two = gsl.principal_angles(np.hstack([a, b]), np.hstack([b, a]))
        np.testing.assert_allclose(two, 0.0, atol=1e-14)


@pytest.mark.parametrize(
    "P, k, model, match",
    [
        (np.full((3, 2), -1 / 6), 1, "forward", "non-negative"),
        (np.full((3, 2), 0.2), 1, "forward", "must sum to 1"),
        (np.array([[0.5, 0.5], [0.0, 0.0]]), 1, "forward", "marginal"),
        (np.full(6, 1 / 6), 1, "forward", "table"),
        (np.full((3, 3), 1 / 9), 0, "forward", "k must be"),
        (np.full((3, 3), 1 / 9), 3, "forward", r"k must be an integer in \[1, .* = 2\]"),
        (np.full((3, 3), 1 / 9), 1, "sideways", "model must be one of"),
        (np.full((3, 3), np.nan), 1, "forward", "finite"),
    ],
)
def test_bad_input_names_the_argument(P, k, model, match):
    with pytest.raises(ValueError, match=match):
        gsl.train_softmax(P, k, model, seed=0)


@pytest.mark.slow
def test_cli_reports_all_three_models(capsys):
    import json

    from gnc_jax._src import cli

    assert cli.main(["gsl", "--nx", "6", "--ny", "4", "--k", "1", "--epsilon", "0.01"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["model"] for r in rows] == list(gsl.MODELS)
    assert all(abs(r["pythagorean_residual"]) < 1e-8 * r["independence_divergence"] for r in rows)
    assert cli.main(["gsl", "--nx", "6", "--ny", "4", "--k", "4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "k must be an integer" in err[0]
