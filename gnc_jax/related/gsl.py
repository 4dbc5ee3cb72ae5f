"""Generalized softmax learning (Xu, Huang, Zheng, Zhang, ITW 2018; ``../shared/papers/004``).

For a discrete joint distribution P(x, y) (an |X| x |Y| array) and k-dimensional features f(x), g(y):

* forward softmax (use X to predict Y):  Q = P_X(x) Q(y|x),  Q(y|x) ∝ exp(f(x)^T g(y) + b(y));
* reverse softmax (use Y to predict X):  Q = P_Y(y) Q(x|y),  Q(x|y) ∝ exp(g(y)^T f(x) + a(x));
* generalized softmax learning (GSL):    Q(x, y) ∝ exp(f(x)^T g(y) + a(x) + b(y)).

Each minimises D(P || Q) (maximum likelihood). The slides show that the three share their solutions
(an M-projection onto the exponential family E_k), that at every stationary Q the marginals are P's
and E_Q[f(X) | Y] = E_P[f(X) | Y], E_Q[g(Y) | X] = E_P[g(Y) | X], and the Pythagorean identity

    D(P || Q) + D(Q || P_X P_Y) = D(P || P_X P_Y).

In the local regime P ≈ P_X P_Y the optimal features are the singular vectors of
B(x, y) = P(x, y) / sqrt(P_X(x) P_Y(y)) after its top pair (singular value 1, vectors sqrt(P_X),
sqrt(P_Y)): f*(x) = u_i(x) / sqrt(P_X(x)), g*(y) = v_i(y) / sqrt(P_Y(y)), i = 2..k+1 (each scaled by
sqrt(sigma_i): the rank-k Eckart–Young truncation of B - sqrt(P_X) sqrt(P_Y)^T).

Numerics: every model is written relative to P_X P_Y (a = log P_X + a', b = log P_Y + b'), so
log(Q / (P_X P_Y)) and the divergences are O(epsilon) quantities computed without cancelling O(1)
terms; near independence D(P || Q) is O(epsilon^2) and still resolved to float64 round-off.
Training is optax's L-BFGS (with its zoom line search), run by ``optimistix.minimise`` until the
gradient norm is below ``grad_tol``.
"""

from __future__ import annotations

import dataclasses
import functools
import time

import jax
import jax.numpy as jnp
import numpy as np

from gnc_jax._src import runner
from gnc_jax._src.process import float64
from gnc_jax._src.errors import InvalidArgument
from gnc_jax.related._optim import minimise_lbfgs
from gnc_jax._src.status import SolutionCore, from_residual

MODELS = ("forward", "reverse", "joint")


def validate_joint(P, name: str = "P") -> np.ndarray:
    """P as a float64 (|X|, |Y|) probability table with positive marginals, or ValueError."""
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2 or min(P.shape) < 2:
        raise InvalidArgument(f"{name} must be an |X| x |Y| table with |X|, |Y| >= 2, got shape {P.shape}")
    if not np.all(np.isfinite(P)) or np.any(P < 0):
        raise InvalidArgument(f"{name} must hold finite non-negative probabilities")
    if abs(P.sum() - 1.0) > 1e-9:
        raise InvalidArgument(f"{name} must sum to 1 (a distribution), got {P.sum()!r}")
    for axis, label in ((1, "P_X"), (0, "P_Y")):
        if np.any(P.sum(axis=axis) <= 0):
            raise InvalidArgument(f"every marginal probability of {name} must be > 0 ({label} has zeros)")
    return P / P.sum()


def _check_k(k, P) -> int:
    kmax = min(P.shape) - 1
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= kmax:
        raise InvalidArgument(f"k must be an integer in [1, min(|X|, |Y|) - 1 = {kmax}], got {k!r}")
    return int(k)


def b_matrix(P) -> np.ndarray:
    """B(x, y) = P(x, y) / sqrt(P_X(x) P_Y(y)); its top singular value is 1."""
    P = validate_joint(P)
    return P / np.sqrt(np.outer(P.sum(axis=1), P.sum(axis=0)))


@dataclasses.dataclass(frozen=True)
class SVDFeatures:
    """The local-regime solution: f (|X|, k), g (|Y|, k), singular values sigma_2..sigma_{k+1}."""

    f: np.ndarray
    g: np.ndarray
    singular_values: np.ndarray


@float64
def svd_features(P, k: int) -> SVDFeatures:
    """f*(x) = sqrt(sigma_i) u_i(x) / sqrt(P_X(x)), g*(y) = sqrt(sigma_i) v_i(y) / sqrt(P_Y(y)) for
    the singular pairs i = 2..k+1 of :func:`b_matrix` (the first pair is sqrt(P_X), sqrt(P_Y))."""
    P = validate_joint(P)
    k = _check_k(k, P)
    U, S, Vt = np.linalg.svd(b_matrix(P))
    s = S[1 : k + 1]
    px, py = P.sum(axis=1), P.sum(axis=0)
    f = U[:, 1 : k + 1] * np.sqrt(s) / np.sqrt(px)[:, None]
    g = Vt[1 : k + 1].T * np.sqrt(s) / np.sqrt(py)[:, None]
    return SVDFeatures(f=f, g=g, singular_values=s)


@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def _draw(key, nx: int, ny: int, r: int):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    return (
        jax.random.dirichlet(k1, jnp.full(nx, 5.0)),
        jax.random.dirichlet(k2, jnp.full(ny, 5.0)),
        jax.random.normal(k3, (nx, r)),
        jax.random.normal(k4, (ny, r)),
    )


@float64
def near_independent(key, nx: int, ny: int, epsilon: float, decay: float = 0.5) -> np.ndarray:
    """A random P = P_X P_Y (1 + epsilon Phi / max|Phi|) near independence.

    P_X, P_Y are random (Dirichlet(5)); Phi = (U diag(s) V^T) / (sqrt(P_X) sqrt(P_Y)^T) with U, V
    random orthonormal columns orthogonal to sqrt(P_X), sqrt(P_Y), so that the marginals stay P_X, P_Y
    and the singular values of B - sqrt(P_X) sqrt(P_Y)^T are proportional to s_i = decay^i: every
    leading singular subspace is well separated from the rest.
    """
    (nx,) = runner.positive_ints("nx", nx)
    (ny,) = runner.positive_ints("ny", ny)
    if not (isinstance(epsilon, (int, float)) and 0 < epsilon <= 1):
        raise InvalidArgument(f"epsilon must be in (0, 1], got {epsilon!r}")
    if not (isinstance(decay, (int, float)) and 0 < decay <= 1):
        raise InvalidArgument(f"decay must be in (0, 1], got {decay!r}")
    r = min(nx, ny) - 1
    px, py, Gx, Gy = map(np.asarray, _draw(key, nx, ny, r))

    def frame(G, p):  # orthonormal columns orthogonal to sqrt(p)
        return np.linalg.qr(np.sqrt(p)[:, None] * (G - p @ G))[0]

    phi = (frame(Gx, px) * decay ** np.arange(r)) @ frame(Gy, py).T / np.sqrt(np.outer(px, py))
    P = np.outer(px, py) * (1.0 + epsilon * phi / np.abs(phi).max())
    return P / P.sum()


def _log_ratio(params, model: str, log_px, log_py):
    """log(Q / (P_X P_Y)) for the model's parameters (O(epsilon) near independence)."""
    s = params["f"] @ params["g"].T
    if model == "forward":
        s = s + params["b"][None, :]
        return s - jax.nn.logsumexp(s + log_py[None, :], axis=1, keepdims=True)
    if model == "reverse":
        s = s + params["a"][:, None]
        return s - jax.nn.logsumexp(s + log_px[:, None], axis=0, keepdims=True)
    s = s + params["a"][:, None] + params["b"][None, :]
    return s - jax.nn.logsumexp(s + log_px[:, None] + log_py[None, :])


def _divergence(P, log_ratio_p, log_ratio_q):
    """D(P || Q) = sum P (log(P / P_X P_Y) - log(Q / P_X P_Y)), terms where P > 0."""
    return jnp.sum(jnp.where(P > 0, P * (log_ratio_p - log_ratio_q), 0.0))


@dataclasses.dataclass(frozen=True, kw_only=True)
class GSLResult(SolutionCore):
    """A trained softmax model and its checks.

    Attributes:
      model: 'forward', 'reverse' or 'joint'; f (|X|, k), g (|Y|, k), a (|X|,), b (|Y|,) (a for the
        reverse and joint models, b for forward and joint, relative to log P_X and log P_Y; zeros
        where the model has none); Q the model's joint distribution.
      divergence: D(P || Q); independence_divergence: D(P || P_X P_Y).
      pythagorean_residual: D(P || Q) + D(Q || P_X P_Y) - D(P || P_X P_Y).
      stationarity: max-abs residuals of Q_X = P_X, Q_Y = P_Y, E_Q[f | Y] = E_P[f | Y],
        E_Q[g | X] = E_P[g | X].
      residual (alias ``grad_norm``), steps: the final gradient norm and the steps of the L-BFGS
        run; status: ``stationary`` when the gradient norm reached ``grad_tol``, else ``max_steps``
        or ``nonfinite`` (:mod:`gnc_jax._src.status`); wall_s: the whole call, compilation included.
    """

    model: str
    f: np.ndarray
    g: np.ndarray
    a: np.ndarray
    b: np.ndarray
    Q: np.ndarray
    divergence: float
    independence_divergence: float
    pythagorean_residual: float
    stationarity: dict
    steps: int

    @property
    def grad_norm(self) -> float:
        return self.residual


@functools.cache
def _trainer(model: str, shape: tuple[int, int], k: int):
    nx, ny = shape

    def run(key, P, init_scale, max_steps, grad_tol):
        px, py = P.sum(axis=1), P.sum(axis=0)
        log_px, log_py = jnp.log(px), jnp.log(py)
        lr_p = jnp.where(P > 0, jnp.log(jnp.where(P > 0, P, 1.0) / jnp.outer(px, py)), 0.0)
        d_ind = jnp.sum(P * lr_p)  # D(P || P_X P_Y) > 0 unless X and Y are independent
        scale = jnp.where(d_ind > 0, d_ind, 1.0)
        kf, kg = jax.random.split(key)
        params = {
            "f": init_scale * jax.random.normal(kf, (nx, k)) / jnp.sqrt(px)[:, None],
            "g": init_scale * jax.random.normal(kg, (ny, k)) / jnp.sqrt(py)[:, None],
            "a": jnp.zeros(nx) if model != "forward" else jnp.zeros(0),
            "b": jnp.zeros(ny) if model != "reverse" else jnp.zeros(0),
        }
        # D(P || Q) / D(P || P_X P_Y): the same minimisers, O(1) values and tolerances at any epsilon
        loss = lambda p: _divergence(P, lr_p, _log_ratio(p, model, log_px, log_py)) / scale  # noqa: E731
        return minimise_lbfgs(loss, params, grad_tol, max_steps)

    return jax.jit(run, static_argnames="max_steps")


@float64
def train_softmax(
    P,
    k: int,
    model: str = "forward",
    *,
    key: jax.Array | None = None,
    seed: int | None = None,
    init_scale: float = 0.1,
    max_steps: int = 10000,
    grad_tol: float = 1e-10,
) -> GSLResult:
    """Train the forward, reverse or joint (GSL) softmax model on P by minimising D(P || Q).

    Args:
      P: |X| x |Y| joint distribution (positive marginals).
      k: feature dimension, 1 <= k <= min(|X|, |Y|) - 1.
      model: 'forward', 'reverse' or 'joint'.
      key: a ``jax.random`` key, or
      seed: an int (exactly one of the two); the features start at
        init_scale sqrt(sigma) N(0, 1) / sqrt(P_X(x)) (and / sqrt(P_Y(y)) for g), sigma the largest
        singular value of B - sqrt(P_X) sqrt(P_Y)^T:
        only the scale of the SVD solution, not its directions. Biases start at 0.
      max_steps: L-BFGS steps at most.
      grad_tol: L-BFGS stops earlier once the gradient norm is below it; the gradient is that of
        D(P || Q) / D(P || P_X P_Y), so grad_tol does not depend on how close P is to independence.
    """
    # Long because the three models share one optimisation and one report.
    start = time.perf_counter()
    P = validate_joint(P)
    k = _check_k(k, P)
    if model not in MODELS:
        raise InvalidArgument(f"model must be one of {MODELS}, got {model!r}")
    key = runner.resolve_key(key, seed)
    if not (isinstance(init_scale, (int, float)) and init_scale > 0):
        raise InvalidArgument(f"init_scale must be > 0, got {init_scale!r}")
    (max_steps,) = runner.positive_ints("max_steps", max_steps, minimum=1)
    B = b_matrix(P)
    sigma = np.linalg.svd(B - np.outer(np.sqrt(P.sum(axis=1)), np.sqrt(P.sum(axis=0))), compute_uv=False)[0]
    params, steps, gnorm = _trainer(model, P.shape, k)(
        key, jnp.asarray(P), init_scale * np.sqrt(sigma), max_steps, float(grad_tol)
    )
    params = {name: np.asarray(v) for name, v in params.items()}
    px, py = P.sum(axis=1), P.sum(axis=0)
    log_ratio = np.asarray(_log_ratio(params, model, jnp.log(px), jnp.log(py)))
    indep = np.outer(px, py)
    Q = indep * np.exp(log_ratio)
    lr_p = np.where(P > 0, np.log(np.where(P > 0, P, 1.0) / indep), 0.0)
    d_pq = float(np.sum(np.where(P > 0, P * (lr_p - log_ratio), 0.0)))
    d_p = float(np.sum(P * lr_p))
    d_q = float(np.sum(Q * log_ratio))
    f, g = params["f"], params["g"]
    qx, qy = Q.sum(axis=1), Q.sum(axis=0)
    stationarity = {
        "marginal_x": float(np.abs(qx - px).max()),
        "marginal_y": float(np.abs(qy - py).max()),
        "f_given_y": float(np.abs((Q / qy).T @ f - (P / py).T @ f).max()),
        "g_given_x": float(np.abs((Q / qx[:, None]) @ g - (P / px[:, None]) @ g).max()),
    }
    return GSLResult(
        model=model,
        f=f,
        g=g,
        a=params["a"] if params["a"].size else np.zeros(P.shape[0]),
        b=params["b"] if params["b"].size else np.zeros(P.shape[1]),
        Q=Q,
        divergence=d_pq,
        independence_divergence=d_p,
        pythagorean_residual=d_pq + d_q - d_p,
        stationarity=stationarity,
        steps=int(steps),
        status=from_residual(gnorm, grad_tol),
        residual=float(gnorm),
        wall_s=time.perf_counter() - start,
    )


def principal_angles(A, B, weights=None) -> np.ndarray:
    """Principal angles (radians, ascending) between the column spans of A and B (n x k each),
    after centring each column under ``weights`` (a distribution on the n rows) and scaling rows by
    sqrt(weights): the geometry in which f and g are defined (constants are absorbed by the biases)."""
    A, B = np.asarray(A, np.float64), np.asarray(B, np.float64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[0] != B.shape[0]:
        raise InvalidArgument(f"A and B must be n x k matrices with the same n, got {A.shape} and {B.shape}")
    w = np.full(A.shape[0], 1.0 / A.shape[0]) if weights is None else np.asarray(weights, np.float64)
    sw = np.sqrt(w)[:, None]
    qa, _ = np.linalg.qr(sw * (A - w @ A))
    qb, _ = np.linalg.qr(sw * (B - w @ B))
    cos = np.linalg.svd(qa.T @ qb, compute_uv=False)  # descending
    sin = np.linalg.svd(qb - qa @ (qa.T @ qb), compute_uv=False)[::-1]  # ascending: same order
    return np.arctan2(sin, cos)  # accurate for small angles too, unlike arccos


@float64
def near_independence_rows(nx: int = 20, ny: int = 8, k: int = 2, epsilon: float = 1e-3, seed: int = 0):
    """Paper 004's check, one row per model (forward, reverse, joint) trained on
    :func:`near_independent` (key ``seed``): D(P || Q), the Pythagorean residual, the stationarity
    residuals, the status, and the largest principal angles between the learned features and the
    SVD features of B. Yields the rows as they are computed."""
    P = near_independent(jax.random.key(seed), nx, ny, epsilon)
    svd = svd_features(P, k)
    for model in MODELS:
        r = train_softmax(P, k, model, seed=seed)
        yield {
            "model": model,
            "nx": nx,
            "ny": ny,
            "k": k,
            "epsilon": epsilon,
            "divergence": r.divergence,
            "independence_divergence": r.independence_divergence,
            "pythagorean_residual": r.pythagorean_residual,
            "max_angle_f": float(principal_angles(r.f, svd.f, P.sum(axis=1)).max()),
            "max_angle_g": float(principal_angles(r.g, svd.g, P.sum(axis=0)).max()),
            "status": str(r.status),
            "grad_norm": r.grad_norm,
            "steps": r.steps,
        } | {f"stationarity_{name}": v for name, v in r.stationarity.items()}
