"""Training a network with optax and measuring generalized neural collapse after every epoch.

The loss is the mean cross-entropy of logits W^T h / tau (eq. 2 with features produced by the network).
After each epoch the normalised features of the whole training set are recomputed in eval mode and
measured with :mod:`gnc_jax._src.metrics` in float64: GNC1 (paper's uncentred Sigma_B), GNC2 (certified
rho_one-vs-rest of the classifier's W) and its ratio to rho-hat(d, K), the certified margin of the best
softmax code the core solver finds (a lower bound on rho*), GNC3, NCC
accuracy on the training and the test set (test features against the training class means).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from gnc_jax._src import metrics
from gnc_jax._src.process import float64
from gnc_jax._src.driver import SolverSettings, ValidatedSettings
from gnc_jax._src.errors import InvalidArgument
from gnc_jax.nn.data import Dataset
from gnc_jax.nn.modules import (
    MLP,
    CMFClassifier,
    FixedClassifier,
    Network,
    NormalizedClassifier,
    ResNet,
)

CLASSIFIERS = ("learned", "cmf", "fixed")
BACKBONES = ("mlp", "resnet")


@dataclasses.dataclass(frozen=True)
class TrainSettings(ValidatedSettings):
    """Immutable training settings.

    Attributes:
      epochs: passes over the training set.
      batch_size: mini-batch size (the last incomplete batch of an epoch is dropped).
      optimizer: 'adam' (default) or 'sgd' with momentum (the paper's choice for ResNets, which
        stalled on the small digits MLP: docs/decisions.md); both with a cosine decay to 0.
      learning_rate: initial step size.
      momentum: SGD momentum.
      weight_decay: decoupled L2 on every trained parameter.
      tau_start: None (train at the model's tau throughout) or a larger temperature to start from:
        the logits are rescaled so that the effective temperature falls geometrically from
        ``tau_start`` to the model's tau over the first ``anneal_fraction`` of the epochs, then holds
        (the continuation of Lemma 3.1 that the UFM solver also uses; a small tau from the start
        locks the classifier into the first arrangement that separates the classes).
      anneal_fraction: share of the epochs spent annealing when ``tau_start`` is set.
      measure_every: epochs between the collapse measurements of :func:`epoch_metrics` (epoch 0
        and the last are always measured); at K = 10^4 a measurement certifies W's margin and
        searches the nearest centre of every feature, which costs more than an epoch.
    """

    epochs: int = 200
    batch_size: int = 64
    optimizer: str = "adam"
    learning_rate: float = 1e-2
    momentum: float = 0.9
    weight_decay: float = 5e-4
    tau_start: float | None = None
    anneal_fraction: float = 0.5
    measure_every: int = 1

    def __post_init__(self):
        self._require_ints(("epochs", "batch_size", "measure_every"), 1)
        self._require_positive(("learning_rate",))
        if self.optimizer not in ("sgd", "adam"):
            raise InvalidArgument(f"optimizer must be 'sgd' or 'adam', got {self.optimizer!r}")
        if not isinstance(self.momentum, (int, float)) or not 0 <= self.momentum < 1:
            raise InvalidArgument(f"momentum must be in [0, 1), got {self.momentum!r}")
        if not isinstance(self.weight_decay, (int, float)) or not self.weight_decay >= 0:
            raise InvalidArgument(f"weight_decay must be a number >= 0, got {self.weight_decay!r}")
        if self.tau_start is not None:
            self._require_positive(("tau_start",))
        if not isinstance(self.anneal_fraction, (int, float)) or not 0 < self.anneal_fraction <= 1:
            raise InvalidArgument(f"anneal_fraction must be in (0, 1], got {self.anneal_fraction!r}")

    def temperature_scale(self, tau: float, epoch: int) -> float:
        """Factor on the model's logits in ``epoch`` (1-based): tau / tau_effective(epoch)."""
        if self.tau_start is None or self.tau_start <= tau:
            return 1.0
        span = max(round(self.anneal_fraction * self.epochs), 1)
        t = min((epoch - 1) / span, 1.0)
        return float((tau / self.tau_start) ** (1.0 - t))


@float64
def make_network(
    data: Dataset,
    d: int,
    tau: float,
    classifier: str = "learned",
    backbone: str = "mlp",
    W=None,
    width: int = 128,
    depth: int = 2,
    beta: float = 0.9,
    seed: int = 0,
) -> Network:
    """The network of eq. (1) for ``data``: backbone -> spherical head (d) -> classifier.

    Args:
      data: the dataset (its input shape and number of classes).
      d: the feature dimension.
      tau: the classifier's temperature (> 0).
      classifier: 'learned' (:class:`NormalizedClassifier`), 'cmf' (:class:`CMFClassifier` with
        momentum ``beta``) or 'fixed' (:class:`FixedClassifier` with the given ``W``, (d, K)).
      backbone: 'mlp' (``depth`` layers of ``width``) or 'resnet' (images only; stem ``width``,
        ``depth`` stages of one basic block).
      W: the fixed classifier's (d, K) weights.
      width: backbone width.
      depth: backbone depth.
      beta: the CMF classifier's momentum.
      seed: the parameters' random seed.

    Returns:
      A :class:`Network` (Flax NNX module, in training mode).
    """
    rngs = nnx.Rngs(params=seed)
    K = data.num_classes
    if backbone == "mlp":
        body = MLP(int(np.prod(data.input_shape)), width, depth, rngs=rngs)
    elif backbone == "resnet":
        if len(data.input_shape) != 3:
            raise InvalidArgument(
                f"backbone 'resnet' needs images (H, W, C), got inputs of shape {data.input_shape}"
            )
        body = ResNet(data.input_shape[-1], width, (1,) * depth, rngs=rngs)
    else:
        raise InvalidArgument(f"backbone must be one of {list(BACKBONES)}, got {backbone!r}")
    if classifier == "learned":
        head = NormalizedClassifier(d, K, tau, rngs=rngs)
    elif classifier == "cmf":
        head = CMFClassifier(d, K, tau, beta, rngs=rngs)
    elif classifier == "fixed":
        if W is None or np.shape(W) != (d, K):
            raise InvalidArgument(f"classifier 'fixed' needs W of shape (d, K) = {(d, K)}, got {np.shape(W)}")
        head = FixedClassifier(W, tau)
    else:
        raise InvalidArgument(f"classifier must be one of {list(CLASSIFIERS)}, got {classifier!r}")
    return Network(body, d, head, rngs=rngs)


def _optimizer(settings: TrainSettings, steps: int) -> optax.GradientTransformation:
    schedule = optax.cosine_decay_schedule(settings.learning_rate, max(steps, 1))
    if settings.optimizer == "sgd":
        base = optax.sgd(schedule, momentum=settings.momentum)
    else:
        base = optax.adam(schedule)
    return optax.chain(optax.add_decayed_weights(settings.weight_decay), base)


def _loss(model: Network, x, y, scale):
    h = model.features(x)
    ce = optax.softmax_cross_entropy_with_integer_labels(scale * model.classifier(h), y).mean()
    return ce, h


@nnx.jit
def _train_step(model: Network, optimizer: nnx.Optimizer, x, y, scale):
    (loss, h), grads = nnx.value_and_grad(_loss, has_aux=True)(model, x, y, scale)
    optimizer.update(model, grads)
    if isinstance(model.classifier, CMFClassifier):
        model.classifier.update(h, y)
    return loss


@nnx.jit
def _features_and_loss(model: Network, x, y):
    h = model.features(x)
    logits = model.classifier(h)
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, y)
    return h, jnp.argmax(logits, axis=1), ce


def _evaluate(model: Network, x, y, chunk: int = 2048):
    parts = [_features_and_loss(model, x[i : i + chunk], y[i : i + chunk]) for i in range(0, len(x), chunk)]
    h, pred, ce = (np.concatenate([np.asarray(p[j]) for p in parts]) for j in range(3))
    return h.astype(np.float64), pred, float(ce.mean())


@float64
def classifier_weights(model: Network) -> np.ndarray:
    """The classifier's W as a float64 numpy array, read in float64: a learned or CMF head keeps
    float64 parameters (:func:`make_network`), which outside float64 mode JAX would normalize in
    float32.

    Args:
      model: the network (:func:`make_network`).

    Returns:
      W, (d, K), unit columns, float64.
    """
    if not isinstance(model, Network):
        raise InvalidArgument(
            f"model must be a gnc_jax.nn Network (make_network), got {type(model).__name__}"
        )
    return np.asarray(model.classifier.weights, np.float64)


@float64
def epoch_metrics(
    model: Network, data: Dataset, rho_hat: float | None = None, rho: float | None = None
) -> dict:
    """Accuracy, loss and the GNC metrics (eqs. 6, 3, 8) of the current model, in eval mode and float64.

    Args:
      model: the network.
      data: the dataset (train features for GNC1/3 and the class means; test for accuracies).
      rho_hat: the margin of the best known softmax code (:func:`reference_rho`), for ``gnc2_ratio``.
      rho: the classifier's certified margin (GNC2) where it is already known (a fixed classifier's
        does not change); computed if None.

    Returns:
      A dict: train/test loss and accuracy, gnc1, gnc2, gnc2_ratio, gnc3 and the NCC accuracies.
    """
    model.eval()
    h_tr, pred_tr, loss_tr = _evaluate(model, data.x_train, data.y_train)
    h_te, pred_te, loss_te = _evaluate(model, data.x_test, data.y_test)
    model.train()
    K = data.num_classes
    W = classifier_weights(model)
    means = metrics.class_means(h_tr.T, data.y_train, K)
    rho = metrics.gnc2(W) if rho is None else rho
    return {
        "train_loss": loss_tr,
        "test_loss": loss_te,
        "train_accuracy": float(np.mean(pred_tr == data.y_train)),
        "test_accuracy": float(np.mean(pred_te == data.y_test)),
        "gnc1": metrics.gnc1(h_tr.T, data.y_train, K=K),
        "gnc2": rho,
        "gnc2_ratio": None if rho_hat is None else rho / rho_hat,
        "gnc3": metrics.gnc3(W, h_tr.T, data.y_train),
        "ncc_train_accuracy": metrics.ncc_accuracy(h_tr.T, data.y_train),
        "ncc_test_accuracy": metrics.ncc_accuracy(h_te.T, data.y_test, means=means),
    }


@float64
@functools.cache
def reference_solution(d: int, K: int):
    """The best softmax code the core solver finds in a short run (seed 0, 16 restarts), cached:
    the classifier of the fixed-classifier networks and the margin their features are judged by."""
    from gnc_jax._src.batch import solve_softmax_code
    from gnc_jax._src.search import SearchSettings

    return solve_softmax_code(
        d, K, seed=0, solver=SolverSettings(restarts=16, hop_rounds=2), search=SearchSettings(population=16)
    )


def reference_rho(d: int, K: int) -> float:
    """rho-hat(d, K): the certified margin (eq. 3) of :func:`reference_solution`, a lower bound on
    rho*(d, K), equal to it where Theorem 3.3 gives rho*.

    Args:
      d: the feature dimension.
      K: the number of classes.

    Returns:
      The margin (float64).
    """
    return reference_solution(d, K).rho_one_vs_rest


@float64
def train(
    model: Network,
    data: Dataset,
    settings: TrainSettings | None = None,
    *,
    seed: int = 0,
    rho_hat: float | None = None,
    on_epoch: Callable[[dict], None] | None = None,
) -> list[dict]:
    """Train ``model`` in place with the cross-entropy of eq. (1) (optax), measuring collapse each epoch.

    Mini-batches come from a permutation of the training set drawn from ``jax.random.key(seed)``
    folded with the epoch, so a seed fixes the run.

    Args:
      model: the network (:func:`make_network`).
      data: the dataset.
      settings: :class:`TrainSettings` (defaults if None).
      seed: the mini-batches' seed.
      rho_hat: the reference margin for ``gnc2_ratio`` (:func:`reference_rho`).
      on_epoch: called with each epoch's dict as it is made (progress, writing results as they go).

    Returns:
      One :func:`epoch_metrics` dict per measured epoch (epoch 0: before training; every
      ``settings.measure_every``-th and the last), with ``batch_loss`` the mean mini-batch loss
      since the previous row, ``wall_s`` the time since the start and ``measure_s`` the part of it
      spent measuring.
    """
    settings = settings or TrainSettings()
    n = len(data.x_train)
    bs = min(settings.batch_size, n)
    per_epoch = n // bs
    optimizer = nnx.Optimizer(model, _optimizer(settings, settings.epochs * per_epoch), wrt=nnx.Param)
    key = jax.random.key(seed)
    x_all, y_all = jnp.asarray(data.x_train), jnp.asarray(data.y_train)
    history = []
    t0 = time.perf_counter()
    measuring = 0.0
    fixed = isinstance(model.classifier, FixedClassifier)
    rho = metrics.gnc2(classifier_weights(model)) if fixed else None

    def record(epoch, loss):
        nonlocal measuring
        t = time.perf_counter()
        row = {"epoch": epoch, "batch_loss": loss, "wall_s": t - t0, "measure_s": measuring}
        row |= epoch_metrics(model, data, rho_hat, rho)
        measuring += time.perf_counter() - t
        history.append(row)
        if on_epoch is not None:
            on_epoch(row)

    model.train()
    record(0, None)
    losses = []
    for epoch in range(1, settings.epochs + 1):
        perm = jax.random.permutation(jax.random.fold_in(key, epoch), n)
        scale = jnp.asarray(settings.temperature_scale(model.classifier.tau, epoch), jnp.float32)
        for b in range(per_epoch):
            idx = perm[b * bs : (b + 1) * bs]
            losses.append(_train_step(model, optimizer, x_all[idx], y_all[idx], scale))
        if epoch % settings.measure_every == 0 or epoch == settings.epochs:
            record(epoch, float(np.mean(jax.device_get(losses))))
            losses = []
    return history
