"""Flax NNX building blocks for checking generalized neural collapse on full networks.

A network is ``backbone -> SphericalHead -> classifier``: features h on the unit sphere S^{d-1} and a
classifier with unit columns w_k and temperature tau, logits W^T h / tau (the spherical model of §2 of
Jiang et al.; eq. (2) is this with free features). Classifiers:

* :class:`NormalizedClassifier` — learned W on OB(d, K) (columns normalised in the forward pass);
* :class:`CMFClassifier` — class-mean features (App. B.1): W is the normalised exponential moving
  average (momentum beta) of the mini-batch class means of the features, not trained by gradients;
* :class:`FixedClassifier` — any given W, e.g. a softmax code from :func:`gnc_jax.solve_softmax_code`
  with a chosen class assignment (§4, Fig. 4).

Backbones: :class:`MLP` and a small CIFAR-style :class:`ResNet` (basic blocks, batch norm).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from gnc_jax._src.errors import InvalidArgument


def normalize(x, axis: int = -1):
    """x / ||x|| along ``axis`` (a zero vector stays zero)."""
    return x / jnp.maximum(jnp.linalg.norm(x, axis=axis, keepdims=True), 1e-12)


def _check_dims(d: int, K: int, tau: float) -> None:
    if isinstance(d, bool) or not isinstance(d, int) or d < 2:
        raise InvalidArgument(f"d must be an integer >= 2, got {d!r}")
    if isinstance(K, bool) or not isinstance(K, int) or K < 2:
        raise InvalidArgument(f"K must be an integer >= 2, got {K!r}")
    if not isinstance(tau, (int, float)) or not tau > 0 or tau == float("inf"):
        raise InvalidArgument(f"tau must be a finite number > 0, got {tau!r}")


class SphericalHead(nnx.Module):
    """Linear map to R^d, then L2 normalisation: the paper's normalised features h on S^{d-1} (eq. 1).

    Args:
      in_features: the backbone's output width.
      d: the feature dimension.
      rngs: Flax NNX random streams (``params``).
    """

    def __init__(self, in_features: int, d: int, *, rngs: nnx.Rngs):
        self.linear = nnx.Linear(in_features, d, rngs=rngs)

    def __call__(self, x):
        return normalize(self.linear(x))


class NormalizedClassifier(nnx.Module):
    """Learned classifier on OB(d, K): logits = W^T h / tau with W's columns normalised (eq. 1).

    Args:
      d: the feature dimension.
      K: the number of classes.
      tau: the temperature (> 0).
      rngs: Flax NNX random streams (``params``).
    """

    def __init__(self, d: int, K: int, tau: float, *, rngs: nnx.Rngs):
        _check_dims(d, K, tau)
        self.kernel = nnx.Param(jax.random.normal(rngs.params(), (d, K)))
        self.tau = float(tau)

    @property
    def weights(self):
        """W, (d, K), unit columns."""
        return normalize(self.kernel[...], axis=0)

    def __call__(self, h):
        return h @ self.weights / self.tau


class ClassMeans(nnx.Variable):
    """Running class means of the CMF classifier (updated by :meth:`CMFClassifier.update`, not by
    the optimiser)."""


class CMFClassifier(nnx.Module):
    """Class-mean-feature classifier (App. B.1): w_k = normalised EMA of the mini-batch mean of the
    features of class k, with momentum ``beta``; classes absent from a batch keep their mean.

    Args:
      d: the feature dimension.
      K: the number of classes.
      tau: the temperature (> 0).
      beta: the EMA's momentum, in [0, 1).
      rngs: Flax NNX random streams (``params``: the initial means).
    """

    def __init__(self, d: int, K: int, tau: float, beta: float = 0.9, *, rngs: nnx.Rngs):
        _check_dims(d, K, tau)
        if not 0 <= beta < 1:
            raise InvalidArgument(f"beta must be in [0, 1), got {beta!r}")
        self.means = ClassMeans(normalize(jax.random.normal(rngs.params(), (d, K)), axis=0))
        self.tau, self.beta, self.K = float(tau), float(beta), K

    @property
    def weights(self):
        return normalize(self.means[...], axis=0)

    def __call__(self, h):
        return h @ jax.lax.stop_gradient(self.weights) / self.tau

    def update(self, h, labels):
        """EMA step with the class means of a mini-batch of features h (B, d) and labels (B,)."""
        onehot = jax.nn.one_hot(labels, self.K, dtype=h.dtype)
        counts = onehot.sum(axis=0)
        batch_means = jax.lax.stop_gradient(h).T @ onehot / jnp.maximum(counts, 1.0)
        old = self.means[...]
        self.means[...] = jnp.where(counts > 0, self.beta * old + (1 - self.beta) * batch_means, old)


class FixedWeights(nnx.Variable):
    """A classifier that is given, not trained."""


class FixedClassifier(nnx.Module):
    """A fixed classifier: logits = W^T h / tau for a given W, e.g. a softmax code (eq. 3) with a
    chosen class assignment.

    Args:
      W: (d, K) weights (normalised column-wise; not trained).
      tau: the temperature (> 0).
    """

    def __init__(self, W, tau: float):
        W = jnp.asarray(W, jnp.float32)
        if W.ndim != 2:
            raise InvalidArgument(f"W must have shape (d, K), got {W.shape}")
        _check_dims(W.shape[0], W.shape[1], tau)
        self.fixed = FixedWeights(normalize(W, axis=0))
        self.tau = float(tau)

    @property
    def weights(self):
        return self.fixed[...]

    def __call__(self, h):
        return h @ self.weights / self.tau


class MLP(nnx.Module):
    """A backbone of ``depth`` hidden layers of ``width`` units with ReLU; input (B, ...) is flattened.

    Args:
      in_features: the flattened input size.
      width: units per layer.
      depth: hidden layers.
      rngs: Flax NNX random streams (``params``).
    """

    def __init__(self, in_features: int, width: int = 256, depth: int = 2, *, rngs: nnx.Rngs):
        sizes = [in_features] + [width] * depth
        self.layers = nnx.List([nnx.Linear(a, b, rngs=rngs) for a, b in zip(sizes[:-1], sizes[1:])])
        self.out_features = sizes[-1]

    def __call__(self, x):
        x = x.reshape(x.shape[0], -1)
        for layer in self.layers:
            x = jax.nn.relu(layer(x))
        return x


class BasicBlock(nnx.Module):
    """Two 3x3 convolutions with batch norm and a (projected) identity shortcut (He et al. 2016)."""

    def __init__(self, cin: int, cout: int, stride: int, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(cin, cout, (3, 3), strides=stride, padding=1, use_bias=False, rngs=rngs)
        self.bn1 = nnx.BatchNorm(cout, rngs=rngs)
        self.conv2 = nnx.Conv(cout, cout, (3, 3), padding=1, use_bias=False, rngs=rngs)
        self.bn2 = nnx.BatchNorm(cout, rngs=rngs)
        project = stride != 1 or cin != cout
        self.shortcut = nnx.data(
            nnx.Conv(cin, cout, (1, 1), strides=stride, use_bias=False, rngs=rngs) if project else None
        )

    def __call__(self, x):
        y = jax.nn.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return jax.nn.relu(y + (x if self.shortcut is None else self.shortcut(x)))


class ResNet(nnx.Module):
    """A small CIFAR-style ResNet for (B, H, W, C) images: a 3x3 stem (stride 1, as the paper uses
    for small images), ``len(blocks)`` stages of basic blocks whose width doubles (stride 2 from the
    second stage), global average pooling.

    Args:
      in_channels: C of the images.
      width: the stem's channels.
      blocks: basic blocks per stage.
      rngs: Flax NNX random streams (``params``).
    """

    def __init__(self, in_channels: int, width: int = 16, blocks=(1, 1), *, rngs: nnx.Rngs):
        self.stem = nnx.Conv(in_channels, width, (3, 3), padding=1, use_bias=False, rngs=rngs)
        self.bn = nnx.BatchNorm(width, rngs=rngs)
        layers, cin = [], width
        for stage, n in enumerate(blocks):
            cout = width * 2**stage
            for i in range(n):
                layers.append(BasicBlock(cin, cout, 2 if stage > 0 and i == 0 else 1, rngs=rngs))
                cin = cout
        self.blocks = nnx.List(layers)
        self.out_features = cin

    def __call__(self, x):
        x = jax.nn.relu(self.bn(self.stem(x)))
        for block in self.blocks:
            x = block(x)
        return x.mean(axis=(1, 2))


class Network(nnx.Module):
    """The network of eq. (1): backbone -> spherical head (d) -> classifier; ``features(x)`` gives
    the normalised features h, ``model(x)`` the logits.

    Args:
      backbone: a module with ``out_features`` (:class:`MLP`, :class:`ResNet`).
      d: the feature dimension.
      classifier: :class:`NormalizedClassifier`, :class:`CMFClassifier` or :class:`FixedClassifier`.
      rngs: Flax NNX random streams (``params``).
    """

    def __init__(self, backbone: nnx.Module, d: int, classifier: nnx.Module, *, rngs: nnx.Rngs):
        self.backbone = backbone
        self.head = SphericalHead(backbone.out_features, d, rngs=rngs)
        self.classifier = classifier

    def features(self, x):
        return self.head(self.backbone(x))

    def __call__(self, x):
        return self.classifier(self.features(x))
