"""Softmax weights and centred class means (Seddik, Tamaazousti, AAAI 2022; ``../shared/papers/000``).

Under "near-optimal representations" (NOR: class means asymptotically orthogonal with equal norms,
within-class covariances asymptotically isotropic and small) the weights of a trained softmax layer
become proportional to the centred class means, w_l ∝ m_l - (1/K) sum_j m_j, which suggests
initialising a softmax layer from class means in transfer learning.

Layout as in paper 003: data X is (p, n) with one sample per column, labels (n,) in [0, K), the
softmax layer W is (p, K) with logits W^T x. The loss is the mean cross-entropy plus
(lambda / 2) ||W||^2.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import optimistix as optx

from gnc_jax._src import metrics, runner
from gnc_jax._src.process import float64
from gnc_jax._src.errors import InvalidArgument
from gnc_jax.related._optim import cross_entropy


def _data(X, labels, K=None):
    X = np.asarray(X, np.float64)
    if X.ndim != 2:
        raise InvalidArgument(f"X must be a (p, n) array of samples (columns), got shape {X.shape}")
    return metrics._features(X, labels, K)


def centred_class_means(X, labels, K: int | None = None) -> np.ndarray:
    """(p, K): m_l - (1/K) sum_j m_j, the direction the NOR theory predicts for w_l."""
    X, y, K, _ = _data(X, labels, K)
    M = metrics.class_means(X, y, K)
    return M - M.mean(axis=1, keepdims=True)


def weight_mean_cosines(W, X, labels) -> np.ndarray:
    """(K,) cosine between each learned w_l and its centred class mean."""
    W = np.asarray(W, np.float64)
    M = centred_class_means(X, labels, W.shape[1] if W.ndim == 2 else None)
    if W.shape != M.shape:
        raise InvalidArgument(f"W must be (p, K) = {M.shape}, got shape {W.shape}")
    return np.sum(W * M, axis=0) / (np.linalg.norm(W, axis=0) * np.linalg.norm(M, axis=0))


def softmax_loss(W, X, labels, lam):
    """Mean cross-entropy of logits W^T x plus (1/2) sum_l lam_l ||w_l||^2 (jax, differentiable in W;
    ``lam`` a number or one per class)."""
    return jnp.mean(cross_entropy(W.T @ X, labels)) + 0.5 * jnp.sum(lam * jnp.sum(W**2, axis=0))


@float64
def nor_mixture(key, n: int, p: int, K: int, mean_norm: float = 1.0, epsilon: float = 0.5):
    """Samples of a Gaussian mixture satisfying the NOR conditions of paper 000.

    Means: ``mean_norm`` times orthonormal vectors (m_i^T m_j = mean_norm^2 delta_ij, so mu_2 = 0);
    covariances sigma_1^2 I with sigma_1^2 = p^{-epsilon} (sigma_2 = 0); classes balanced (n // K each,
    the remainder to the first classes). Returns (X (p, n), labels (n,)).
    """
    (n,) = runner.positive_ints("n", n)
    (p,) = runner.positive_ints("p", p)
    (K,) = runner.positive_ints("K", K)
    if p < K:
        raise InvalidArgument(f"K must be <= p for orthogonal means, got K={K}, p={p}")
    if n < K:
        raise InvalidArgument(f"n must be >= K (a sample per class), got n={n}, K={K}")
    if not (mean_norm > 0 and epsilon > 0):
        raise InvalidArgument(f"mean_norm and epsilon must be > 0, got {mean_norm}, {epsilon}")
    k1, k2 = jax.random.split(key)
    means = mean_norm * np.linalg.qr(np.asarray(jax.random.normal(k1, (p, K))))[0]
    labels = np.arange(n) % K
    noise = np.asarray(jax.random.normal(k2, (p, n))) * p ** (-epsilon / 2)
    return means[:, labels] + noise, labels


@float64
def class_mean_init(X, labels, K: int | None = None, lam: float = 1e-3) -> np.ndarray:
    """W0 = c * centred class means M, c >= 0 minimising the regularised loss L(c) along that ray: a
    1-d convex problem, solved by optimistix's golden-section search on [0, c_max], c_max =
    sqrt(2 log K / (lambda ||M||^2)) (L(c) >= (lambda / 2) c^2 ||M||^2 and L(0) = log K bound the
    minimiser)."""
    X, y, K, _ = _data(X, labels, K)
    M = centred_class_means(X, y, K)
    loss = lambda c, _: softmax_loss(c * jnp.asarray(M), jnp.asarray(X), jnp.asarray(y), lam)
    c_max = math.sqrt(2 * math.log(K) / (lam * float(np.sum(M**2))))
    sol = optx.minimise(
        loss,
        optx.GoldenSearch(rtol=1e-10, atol=1e-12),
        jnp.asarray(c_max / 2),
        options={"lower": 0.0, "upper": c_max},
        max_steps=200,
    )
    return float(sol.value) * M


@functools.cache
def _trainer(shape: tuple[int, int], K: int, steps: int, optimizer: str, learning_rate: float):
    opt = optax.adam(learning_rate) if optimizer == "adam" else optax.sgd(learning_rate, momentum=0.9)

    def run(W0, X, y, lam):
        value_and_grad = jax.value_and_grad(lambda W: softmax_loss(W, X, y, lam))

        def step(carry, _):
            W, state = carry
            value, g = value_and_grad(W)
            u, state = opt.update(g, state, W)
            return (optax.apply_updates(W, u), state), value

        (W, _), losses = jax.lax.scan(step, (W0, opt.init(W0)), None, length=steps)
        return W, jnp.append(losses, value_and_grad(W)[0])

    return jax.jit(run)


@float64
def train_softmax_layer(
    X,
    labels,
    K: int | None = None,
    *,
    lam: float = 1e-3,
    init: str | np.ndarray = "random",
    key: jax.Array | None = None,
    seed: int | None = None,
    steps: int = 500,
    optimizer: str = "adam",
    learning_rate: float = 0.05,
) -> tuple[np.ndarray, np.ndarray]:
    """Train the l2-regularised softmax layer by full-batch first-order steps.

    Args:
      X: (p, n) samples.
      labels: their labels.
      lam: l2 weight > 0.
      init: 'random' (N(0, 1) entries scaled to the Frobenius norm of the class-mean initialisation,
        so the two starts differ only in direction), 'class_means' (:func:`class_mean_init`) or a
        (p, K) array.
      key: a ``jax.random`` key, or
      seed: an int (exactly one of the two; used by the random initialisation).
      steps: full-batch steps.
      optimizer: 'adam' or 'sgd' (with momentum 0.9).
      learning_rate: its step size.

    Returns:
      (W (p, K), losses (steps + 1,)), the losses before every step and at the end.
    """
    X, y, K, _ = _data(X, labels, K)
    if not (isinstance(lam, (int, float)) and lam > 0 and math.isfinite(lam)):
        raise InvalidArgument(f"lam must be a finite number > 0, got {lam!r}")
    if optimizer not in ("adam", "sgd"):
        raise InvalidArgument(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    (steps,) = runner.positive_ints("steps", steps, minimum=1)
    key = runner.resolve_key(key, seed)
    if isinstance(init, str):
        if init not in ("random", "class_means"):
            raise InvalidArgument(f"init must be 'random', 'class_means' or a (p, K) array, got {init!r}")
        W0 = class_mean_init(X, y, K, lam)
        if init == "random":
            R = np.asarray(jax.random.normal(key, W0.shape))
            W0 = R * np.linalg.norm(W0) / np.linalg.norm(R)
    else:
        W0 = np.asarray(init, np.float64)
        if W0.shape != (X.shape[0], K):
            raise InvalidArgument(f"init must be a (p, K) = {(X.shape[0], K)} array, got shape {W0.shape}")
    W, losses = _trainer(X.shape, K, steps, optimizer, float(learning_rate))(
        jnp.asarray(W0), jnp.asarray(X), jnp.asarray(y), lam
    )
    return np.asarray(W), np.asarray(losses)


def steps_to_reach(losses, target: float) -> int:
    """First step index at which the loss is <= target (len(losses) if never)."""
    hits = np.flatnonzero(np.asarray(losses) <= target)
    return int(hits[0]) if hits.size else len(losses)


@float64
def alignment_rows(ps, K: int = 4, lam: float = 1e-2, steps: int = 2000, seeds: int = 3):
    """Paper 000's experiment, one row per p in ``ps`` (n = 2p samples of :func:`nor_mixture`, key 0):
    the cosines of the learned weights (seed 0) to the centred class means (mean and min), and the
    median over ``seeds`` seeds of the steps to 1.01 x the best loss from random starts and from the
    class-mean initialisation (same norm). Yields the rows as they are computed."""
    ps = runner.positive_ints("p", ps)
    (K,) = runner.positive_ints("K", K)
    (seeds,) = runner.positive_ints("seeds", seeds, minimum=1)
    (steps,) = runner.positive_ints("steps", steps, minimum=1)
    for p in ps:
        if p < K:
            raise InvalidArgument(f"p must be >= K (orthogonal means), got p={p}, K={K}")
    for p in ps:
        X, y = nor_mixture(jax.random.key(0), 2 * p, p, K)
        reached = []
        for seed in range(seeds):
            Wr, lr = train_softmax_layer(X, y, K, lam=lam, seed=seed, steps=steps)
            _, lc = train_softmax_layer(X, y, K, lam=lam, init="class_means", seed=seed, steps=steps)
            target = 1.01 * min(lr.min(), lc.min())
            reached.append((steps_to_reach(lr, target), steps_to_reach(lc, target)))
            if seed == 0:
                cos = weight_mean_cosines(Wr, X, y)
        med = np.median(np.array(reached), axis=0)
        yield {
            "p": p,
            "n": 2 * p,
            "K": K,
            "lam": lam,
            "mean_cos": float(cos.mean()),
            "min_cos": float(cos.min()),
            "median_steps_random": float(med[0]),
            "median_steps_class_means": float(med[1]),
        }
