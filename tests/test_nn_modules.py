"""Flax NNX modules: shapes, normalisation, the CMF moving average, fixed weights stay fixed."""

import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from gnc_jax import nn
from gnc_jax.nn import modules


def test_head_and_learned_classifier():
    rngs = nnx.Rngs(0)
    head = nn.SphericalHead(5, 3, rngs=rngs)
    h = head(jnp.ones((4, 5)) * jnp.arange(4.0)[:, None] + 1)
    np.testing.assert_allclose(jnp.linalg.norm(h, axis=1), 1.0, rtol=1e-6)
    clf = nn.NormalizedClassifier(3, 7, 0.1, rngs=rngs)
    W = clf.weights
    np.testing.assert_allclose(jnp.linalg.norm(W, axis=0), 1.0, rtol=1e-6)
    np.testing.assert_allclose(clf(h), h @ W / 0.1, rtol=1e-6)


def test_cmf_update_is_the_exponential_moving_average_of_batch_means():
    clf = nn.CMFClassifier(3, 4, 0.5, beta=0.8, rngs=nnx.Rngs(1))
    old = np.asarray(clf.means[...])
    rng = np.random.default_rng(0)
    h = rng.standard_normal((10, 3)).astype(np.float32)
    y = np.array([0, 0, 1, 1, 1, 2, 0, 1, 2, 2])  # class 3 absent: keeps its mean
    clf.update(jnp.asarray(h), jnp.asarray(y))
    expect = old.copy()
    for k in range(3):
        expect[:, k] = 0.8 * old[:, k] + 0.2 * h[y == k].mean(axis=0)
    np.testing.assert_allclose(clf.means[...], expect, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(clf.weights, expect / np.linalg.norm(expect, axis=0), rtol=1e-5)


@pytest.mark.slow
def test_fixed_and_cmf_weights_are_not_trained_by_the_optimizer(x64):
    data = nn.gaussian_mixture(4, dim=6, per_class=20, seed=0)
    W = np.linalg.qr(np.random.default_rng(0).standard_normal((4, 4)))[0][:2]
    for kind in ("fixed", "cmf"):
        model = nn.make_network(data, 2, 0.5, classifier=kind, W=W if kind == "fixed" else None, width=8)
        opt = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
        before = np.asarray(model.classifier.weights)
        loss = lambda m: optax.softmax_cross_entropy_with_integer_labels(
            m(jnp.asarray(data.x_train)), jnp.asarray(data.y_train)
        ).mean()
        grads = nnx.grad(loss)(model)
        opt.update(model, grads)
        np.testing.assert_array_equal(model.classifier.weights, before)
        if kind == "fixed":
            np.testing.assert_allclose(before, W / np.linalg.norm(W, axis=0), rtol=1e-6)


def test_backbones_shapes():
    rngs = nnx.Rngs(0)
    x = jnp.ones((2, 8, 8, 1), jnp.float32)  # BatchNorm keeps float32 running statistics
    assert nn.MLP(64, 16, 3, rngs=rngs)(x).shape == (2, 16)
    net = nn.ResNet(1, 4, (1, 1), rngs=rngs)
    assert net(x).shape == (2, 8) and net.out_features == 8


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(d=1, K=3, tau=0.1), "d must"),
        (dict(d=3, K=1, tau=0.1), "K must"),
        (dict(d=3, K=3, tau=0.0), "tau must"),
        (dict(d=3, K=3, tau=-1.0), "tau must"),
    ],
)
def test_bad_classifier_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        nn.NormalizedClassifier(kwargs["d"], kwargs["K"], kwargs["tau"], rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=match):
        nn.CMFClassifier(kwargs["d"], kwargs["K"], kwargs["tau"], rngs=nnx.Rngs(0))


def test_normalize_keeps_zero_vectors_finite():
    out = modules.normalize(jnp.zeros((2, 3)))
    assert bool(jnp.all(jnp.isfinite(out)))
    # A zero vector stays zero (no NaN from 0 / 0), and non-zero rows still get unit norm.
    assert out.shape == (2, 3) and bool(jnp.all(out == 0.0))
    mixed = modules.normalize(jnp.array([[0.0, 0.0], [3.0, 4.0]]))
    np.testing.assert_allclose(np.asarray(mixed), [[0.0, 0.0], [0.6, 0.8]], atol=1e-7)
