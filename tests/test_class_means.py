"""Softmax weights and centred class means (gnc_jax.related.class_means, paper 000)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gnc_jax.related import class_means as cm


def test_centred_means_and_loss_against_a_hand_computation(x64):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(5, 12)), np.arange(12) % 3
    M = np.stack([X[:, y == k].mean(axis=1) for k in range(3)], axis=1)
    np.testing.assert_allclose(cm.centred_class_means(X, y), M - M.mean(axis=1, keepdims=True), atol=1e-15)
    W = rng.normal(size=(5, 3))
    Z = W.T @ X
    ce = np.log(np.exp(Z).sum(axis=0)) - Z[y, np.arange(12)]
    expected = ce.mean() + 0.5 * 0.1 * np.sum(W**2)
    assert float(cm.softmax_loss(jnp.asarray(W), jnp.asarray(X), jnp.asarray(y), 0.1)) == pytest.approx(
        expected, rel=1e-14
    )


@pytest.mark.slow
def test_learned_weights_align_with_centred_means_as_p_grows():
    cos = []
    for p in (16, 64, 256):
        X, y = cm.nor_mixture(jax.random.key(0), 2 * p, p, 4)
        W, _ = cm.train_softmax_layer(X, y, 4, lam=1e-2, seed=0, steps=2000)
        cos.append(cm.weight_mean_cosines(W, X, y).mean())
    assert cos[0] < cos[1] < cos[2] and cos[2] > 0.97 and cos[0] < 0.95


@pytest.mark.slow
def test_class_mean_initialisation_reaches_the_target_sooner(x64):
    X, y = cm.nor_mixture(jax.random.key(1), 256, 128, 4)
    W0 = cm.class_mean_init(X, y, 4, lam=1e-2)
    loss = lambda c: float(cm.softmax_loss(jnp.asarray(c * W0), jnp.asarray(X), jnp.asarray(y), 1e-2))  # noqa: E731
    assert loss(1.0) < min(loss(1 + 1e-4), loss(1 - 1e-4))  # the scale is optimal along the ray
    steps = []
    for seed in range(3):
        _, lr = cm.train_softmax_layer(X, y, 4, lam=1e-2, seed=seed, steps=1500)
        _, lc = cm.train_softmax_layer(X, y, 4, lam=1e-2, init="class_means", seed=seed, steps=1500)
        target = 1.01 * min(lr.min(), lc.min())
        assert lc[0] < lr[0]
        steps.append((cm.steps_to_reach(lr, target), cm.steps_to_reach(lc, target)))
    random_steps, mean_steps = np.median(np.array(steps), axis=0)
    assert mean_steps < random_steps / 2


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"lam": 0.0}, "lam must be"),
        ({"init": "zeros"}, "init must be"),
        ({"init": np.zeros((3, 3))}, r"init must be a \(p, K\)"),
        ({"optimizer": "lbfgs"}, "optimizer must be"),
        ({"steps": 0}, "steps must be >= 1"),
    ],
)
def test_bad_input_names_the_argument(kwargs, match):
    X, y = np.ones((4, 6)), np.arange(6) % 2
    with pytest.raises(ValueError, match=match):
        cm.train_softmax_layer(X, y, **({"seed": 0} | kwargs))


def test_bad_mixture_and_data():
    with pytest.raises(ValueError, match="K must be <= p"):
        cm.nor_mixture(jax.random.key(0), 10, 3, 4)
    with pytest.raises(ValueError, match=r"X must be a \(p, n\)"):
        cm.centred_class_means(np.ones(5), np.zeros(5, int))


@pytest.mark.slow
def test_cli_reports_alignment_and_steps(capsys):
    import json

    from gnc_jax._src import cli

    assert cli.main(["class-means", "--p", "16,64", "--steps", "800", "--seeds", "2"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["p"] for r in rows] == [16, 64] and rows[1]["mean_cos"] > rows[0]["mean_cos"]
    assert all(r["median_steps_class_means"] < r["median_steps_random"] for r in rows)
    assert cli.main(["class-means", "--p", "3", "--K", "4"]) == 2
    assert "p must be >= K" in capsys.readouterr().err
