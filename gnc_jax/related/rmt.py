"""Large-dimensional softmax classifier: the fixed point of Theorem 4.8 and Algorithm 1
(Seddik, Louart, Couillet, Tamaazousti; ``../shared/papers/003``): the binary case of the paper's
experiments (:func:`predict_binary`, Gauss–Hermite quadrature) and k classes
(:func:`predict_multiclass`, Monte Carlo with a key; block comment further down). Library
solvers throughout: the binary fixed point is optimistix's ``FixedPointIteration``, compiled whole;
xi (scalar and vector) is optimistix's ``Newton``, vmapped; the Stein equation of R_2 is scipy's
``solve_discrete_lyapunov``; the trained classifiers use optax's L-BFGS. The k-class iteration runs
from Python around its compiled Newton solves, which compile in reasonable time where the whole
iteration as one program does not (docs/decisions.md). The theory is asymptotic and needs the
contractive regime (Assumption 3, Remark 4.1).

Data: class l has mean mu_l and covariance C_l (p-dimensional), proportion gamma_l, n samples in
all. The classifier is the l2-regularised softmax of the paper's Section 3.1 with k = 2 and
lambda_1 = lambda_2 = lambda: minimise mean CE(W^T x) + (lambda / 2)(||w_1||^2 + ||w_2||^2). At the
optimum w_1 = -w_2, so w = w_1 - w_2 solves the scalar-label fixed point (3),

    w = (1/n) sum_i f_{c(i)}(w^T x_i) x_i,  f_1(t) = (2/lambda) sigmoid(-t),  f_2(t) = -(2/lambda) sigmoid(t),

and x is assigned to class 1 iff w^T x > 0. Theorem 4.8: the leave-one-out score z = x^T w_{-i} of a
class-l sample is asymptotically N(m_l, sigma_l^2), where, with xi_l(z) the solution of
x = f_l(z + delta_l x) (Proposition 4.6) and expectations over z ~ N(m_l, sigma_l^2),

    mu~ = sum_l gamma_l E[xi_l] mu_l,  C~ = sum_l gamma_l E[xi_l^2] C_l,  K = sum_l gamma_l E[xi_l'] C_l,
    R_1 = (I - K)^{-1},  R_2(M) = M + K R_2(M) K,
    m_l = mu_l^T R_1 mu~,  sigma_l^2 = (1/n) tr(C_l R_2(C~)) + mu~^T R_1 C_l R_1 mu~,
    delta_l = (1/n) tr(C_l R_1).

Two details differ from the extracted text, following the derivation: xi' = f'/(1 - delta f')
(differentiate x = f(z + delta x)), and delta uses R_1 = (I - K)^{-1} (Lemma 4.7; the theorem's
line shows C~). A training sample's own score is z + delta xi(z) (Theorem 4.4), so the predicted
training accuracy uses the threshold z_0 = -delta_l f_l(0) on z, the test accuracy the threshold 0.

The Gaussian expectations use Gauss–Hermite quadrature (deterministic); the fixed point is iterated
(Algorithm 1) until the change of (delta, m, sigma) is below ``tol``. Contractivity (Assumption 3)
needs lambda large enough: (1/n) ||f'||_inf ||X X^T|| < 1 with ||f'||_inf = 1 / (2 lambda).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time

import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
import scipy.linalg
from jax.scipy.special import ndtr

from gnc_jax._src import runner
from gnc_jax._src.process import float64
from gnc_jax._src.errors import InvalidArgument
from gnc_jax.related._optim import minimise_lbfgs
from gnc_jax.related.class_means import softmax_loss
from gnc_jax._src.status import SolutionCore, Status, from_residual

_NODES, _WEIGHTS = np.polynomial.hermite.hermgauss(80)


def _f(c: int, t, lam):
    """f_1 and f_2 of the binary softmax (module docstring) and their derivatives."""
    s = jax.nn.sigmoid(t)
    if c == 0:
        return 2.0 / lam * (1.0 - s), -2.0 / lam * s * (1.0 - s)
    return -2.0 / lam * s, -2.0 / lam * s * (1.0 - s)


_NEWTON = optx.Newton(rtol=1e-13, atol=1e-13)


@functools.partial(jax.jit, static_argnums=(0,))
def _xi(c: int, z, delta, lam):
    """xi_c(z): the root of x - f_c(z + delta x) (strictly increasing in x) by optimistix's Newton,
    one scalar solve per element of z; xi_c'(z) = f'/(1 - delta f'); and whether every solve
    converged."""

    def one(z):
        residual = lambda x, _: x - _f(c, z + delta * x, lam)[0]
        sol = optx.root_find(residual, _NEWTON, _f(c, z, lam)[0], max_steps=100, throw=False)
        return sol.value, sol.result == optx.RESULTS.successful

    x, ok = jax.vmap(one)(jnp.ravel(z))
    x = x.reshape(jnp.shape(z))
    d = _f(c, z + delta * x, lam)[1]
    return x, d / (1.0 - delta * d), jnp.all(ok)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RMTPrediction(SolutionCore):
    """Theorem 4.8's statistics and the accuracies they predict.

    Attributes:
      delta, m, sigma: (2,) per class; z of a class-l sample is N(m_l, sigma_l^2).
      mean_w: (p,) the deterministic equivalent R_1 mu~ of E[w].
      train_accuracy, test_accuracy: (2,) per class; overall_* weighted by gamma.
      iterations: fixed-point iterations used (optimistix's ``FixedPointIteration``).
      residual: max |update(y) - y| over (delta, m, sigma) at the returned y: the fixed-point
        equations hold to it.
      status: ``stationary`` when the residual is <= ``tol``, else ``max_steps`` or ``nonfinite``;
        ``failed`` when a Newton solve for xi did not converge (:mod:`gnc_jax._src.status`).
    """

    delta: np.ndarray
    m: np.ndarray
    sigma: np.ndarray
    mean_w: np.ndarray
    train_accuracy: np.ndarray
    test_accuracy: np.ndarray
    overall_train_accuracy: float
    overall_test_accuracy: float
    iterations: int


def _fixed_point_status(change, tol, newton_ok) -> dict:
    """The status fields of a fixed point whose update needs Newton solves for xi."""
    if not bool(newton_ok):
        return {
            "status": Status.FAILED,
            "residual": float(change),
            "status_note": "Newton for xi did not converge",
        }
    return {"status": from_residual(change, tol), "residual": float(change)}


def _statistics(means, covs, proportions, n: int, lam: float):
    """The binary case of :func:`_multiclass_inputs` (k = 2, one lambda)."""
    if np.ndim(means) != 2 or np.shape(means)[0] != 2:
        raise InvalidArgument(f"means must be (2, p) (binary case), got shape {np.shape(means)}")
    if not (isinstance(lam, (int, float)) and math.isfinite(lam) and lam > 0):
        raise InvalidArgument(f"lam must be a finite number > 0, got {lam!r}")
    means, covs, gamma, n, _ = _multiclass_inputs(means, covs, proportions, n, lam)
    return means, covs, gamma, n, float(lam)


def _psd_root(C) -> np.ndarray:
    """Symmetric square root of a positive semi-definite matrix (singular ones included)."""
    e, V = np.linalg.eigh(C)
    return V * np.sqrt(np.maximum(e, 0.0)) @ V.T


def _sample(key, means, covs, labels) -> np.ndarray:
    """X (p, n): column i drawn from N(means[labels[i]], covs[labels[i]])."""
    G = np.asarray(jax.random.normal(key, (means.shape[1], len(labels))))
    X = np.empty_like(G)
    for c in range(len(means)):
        X[:, labels == c] = means[c][:, None] + _psd_root(covs[c]) @ G[:, labels == c]
    return X


def _binary_update(state, args):
    """One step of Algorithm 1: (delta, m, sigma) -> the next (delta, m, sigma), and (mean_w,
    whether every Newton solve for xi converged)."""
    delta, m, sigma = state
    means, covs, gamma, n, lam = args
    p = means.shape[1]
    t = jnp.sqrt(2.0) * _NODES
    wq = _WEIGHTS / jnp.sqrt(jnp.pi)
    E, ok = [], True
    for c in range(2):
        xi, dxi, ok_c = _xi(c, m[c] + sigma[c] * t, delta[c], lam)
        ok &= ok_c
        E.append(jnp.stack([wq @ xi, wq @ xi**2, wq @ dxi]))
    E = jnp.stack(E)  # (2, 3): E[xi], E[xi^2], E[xi']
    mu_t = (gamma * E[:, 0]) @ means
    C_t = jnp.einsum("l,lij->ij", gamma * E[:, 1], covs)
    K = jnp.einsum("l,lij->ij", gamma * E[:, 2], covs)
    R1 = jnp.linalg.inv(jnp.eye(p) - K)
    lam_k, V = jnp.linalg.eigh((K + K.T) / 2)
    R2 = V @ ((V.T @ C_t @ V) / (1.0 - jnp.outer(lam_k, lam_k))) @ V.T  # sum_j K^j C~ K^j
    mean_w = R1 @ mu_t
    sigma2 = jnp.einsum("lij,ji->l", covs, R2) / n + jnp.einsum("i,lij,j->l", mean_w, covs, mean_w)
    return (jnp.einsum("lij,ji->l", covs, R1) / n, means @ mean_w, jnp.sqrt(sigma2)), (mean_w, ok)


def _change(new, old):
    """The largest absolute change between two pytrees (the fixed points' residual)."""
    return optx.max_norm(jax.tree.map(jnp.subtract, new, old))


@functools.partial(jax.jit, static_argnames="max_iter")
def _binary_fixed_point(means, covs, gamma, n, lam, tol, max_iter):
    """Algorithm 1 by optimistix's fixed-point iteration from delta = m = sigma = 1; returns the
    fixed point, (mean_w, Newton converged), the iterations and the residual max |update(y) - y| at
    the returned y."""
    args = (means, covs, gamma, n, lam)
    y0 = (jnp.ones(2, means.dtype),) * 3
    sol = optx.fixed_point(
        _binary_update,
        optx.FixedPointIteration(rtol=0.0, atol=tol),
        y0,
        args,
        has_aux=True,
        max_steps=max_iter,
        throw=False,
    )
    y, aux = _binary_update(sol.value, args)
    return y, aux, sol.stats["num_steps"], _change(y, sol.value)


@float64
def predict_binary(means, covs, proportions, n: int, lam: float, tol: float = 1e-12, max_iter: int = 1000):
    """Algorithm 1 for the binary softmax classifier: (delta, m, sigma) and predicted accuracies.

    Args:
      means: (2, p) class means; covs: (2, p, p) covariances (symmetric positive semi-definite:
        only (I - K)^{-1} is inverted, and K is negative semi-definite, so singular C_l are fine).
      proportions: (gamma_1, gamma_2); n: training samples; lam: regularisation lambda > 0.
    """
    start = time.perf_counter()
    means, covs, gamma, n, lam = _statistics(means, covs, proportions, n, lam)
    (delta, m, sigma), (mean_w, newton_ok), iterations, change = jax.tree.map(
        np.asarray, _binary_fixed_point(means, covs, gamma, float(n), lam, tol, max_iter=max_iter)
    )
    f0 = np.array([float(_f(0, 0.0, lam)[0]), float(_f(1, 0.0, lam)[0])])
    z0 = -delta * f0
    test = np.array([ndtr(m[0] / sigma[0]), ndtr(-m[1] / sigma[1])], dtype=np.float64)
    train = np.array([ndtr((m[0] - z0[0]) / sigma[0]), ndtr((z0[1] - m[1]) / sigma[1])], dtype=np.float64)
    return RMTPrediction(
        delta=delta,
        m=m,
        sigma=sigma,
        mean_w=mean_w,
        train_accuracy=train,
        test_accuracy=test,
        overall_train_accuracy=float(gamma @ train),
        overall_test_accuracy=float(gamma @ test),
        iterations=int(iterations),
        wall_s=time.perf_counter() - start,
        **_fixed_point_status(change, tol, newton_ok),
    )


@float64
def sample_mixture(key, means, covs, proportions, n: int):
    """n Gaussian samples, round(gamma_1 n) of class 0 first: (X (p, n), labels (n,))."""
    means, covs, gamma, n, _ = _statistics(means, covs, proportions, n, 1.0)
    n1 = int(round(gamma[0] * n))
    labels = np.repeat([0, 1], [n1, n - n1])
    return _sample(key, means, covs, labels), labels


@dataclasses.dataclass(frozen=True, kw_only=True)
class SoftmaxFit(SolutionCore):
    """An empirical softmax classifier trained by L-BFGS: ``weights`` (w (p,) binary, W (p, k)
    k-class), ``status`` (``stationary`` when the gradient norm ``residual`` (alias ``grad_norm``)
    reached ``grad_tol``, else ``max_steps`` or ``nonfinite``) and the L-BFGS ``steps``."""

    weights: np.ndarray
    steps: int

    @property
    def grad_norm(self) -> float:
        return self.residual


def _fit(out, grad_tol, start) -> SoftmaxFit:
    x, steps, gnorm = out
    return SoftmaxFit(
        weights=np.asarray(x),
        steps=int(steps),
        status=from_residual(gnorm, grad_tol),
        residual=float(gnorm),
        wall_s=time.perf_counter() - start,
    )


@float64
def train_binary_softmax(X, labels, lam: float, grad_tol: float = 1e-10, max_steps: int = 500) -> SoftmaxFit:
    """w = w_1 - w_2 of the l2-regularised binary softmax (module docstring), trained to convergence
    with optax's L-BFGS on mean log(1 + exp(-s_i w^T x_i)) + (lambda / 4) ||w||^2 (s = +1, -1), which
    is the two-weight loss at its optimum w_1 = -w_2 = w / 2."""
    start = time.perf_counter()
    (max_steps,) = runner.positive_ints("max_steps", max_steps, minimum=1)
    signs = np.where(np.asarray(labels) == 0, 1.0, -1.0)
    out = _lbfgs(jnp.asarray(X, jnp.float64), jnp.asarray(signs), lam, grad_tol, max_steps)
    return _fit(out, grad_tol, start)


@functools.partial(jax.jit, static_argnames="max_steps")
def _lbfgs(X, s, lam, grad_tol, max_steps):
    def loss(w):
        return jnp.mean(jax.nn.softplus(-s * (w @ X))) + lam / 4 * jnp.sum(w**2)

    return minimise_lbfgs(loss, jnp.zeros(X.shape[0], X.dtype), grad_tol, max_steps)


@float64
def binary_accuracy(w, X, labels) -> np.ndarray:
    """(2,) per-class accuracy of the rule "class 0 iff w^T x > 0"."""
    score = np.asarray(w) @ np.asarray(X)
    labels = np.asarray(labels)
    return np.array([np.mean(score[labels == 0] > 0), np.mean(score[labels == 1] <= 0)])


# --------------------------------------------------------------------------------------------------
# k classes (the paper's Section 3.1 classifier with phi = exp; Supplementary Material's setting).
#
# W (p, k) solves W = (1/n) sum_i x_i F_{c(i)}(W^T x_i)^T with F_c(t) = Lambda^{-1} (e_c - softmax(t)).
# The scalar quantities of Theorem 4.8 become k-vectors and k x k matrices: the leave-one-out scores
# z = W_{-i}^T x_i of class c are N(m_c, S_c) in R^k; xi_c(z) = F_c(t) with t = z + Delta_c F_c(t);
# J_c = d xi_c / dz = (I - J_F Delta_c)^{-1} J_F; with column-stacked vec(W),
#   Kop = sum_c gamma_c E[J_c] (x) C_c  (pk x pk),  R_1 = (I - Kop)^{-1},  vec(W_bar) = R_1 vec(M~),
#   M~ = sum_c gamma_c mu_c E[xi_c]^T,  C~ = sum_c gamma_c E[xi_c xi_c^T] (x) C_c,
#   R_2(M) = M + Kop R_2(M) Kop^T,  Delta_c[a, b] = (1/n) tr(C_c R_1[a, b]),
#   m_c = W_bar^T mu_c,  S_c[a, b] = (1/n) tr(C_c R_2(C~)[a, b]) + (W_bar^T C_c W_bar)[a, b],
# where X[a, b] is the (a, b) block of size p x p. Gaussian expectations by Monte Carlo with a key
# (common random numbers across iterations, so the iteration is a deterministic map).
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class MulticlassPrediction(SolutionCore):
    """The k-class fixed point: Delta (k, k, k), m (k, k), S (k, k, k) per class; mean_W (p, k);
    per-class and overall predicted train / test accuracies; iterations, the residual (the last
    iteration's change, max-abs over Delta, m, S) and the status it gives against ``tol`` (as
    :class:`RMTPrediction`)."""

    Delta: np.ndarray
    m: np.ndarray
    S: np.ndarray
    mean_W: np.ndarray
    train_accuracy: np.ndarray
    test_accuracy: np.ndarray
    overall_train_accuracy: float
    overall_test_accuracy: float
    iterations: int


def _softmax_F(c: int, t, lams):
    """F_c(t) = (e_c - softmax(t)) / lambda and its Jacobian."""
    s = jax.nn.softmax(t)
    e = jnp.zeros_like(t).at[c].set(1.0)
    J = -(jnp.diag(s) - jnp.outer(s, s)) / lams[:, None]
    return (e - s) / lams, J


@functools.partial(jax.jit, static_argnums=(0,))
def _xi_vector(c: int, Z, Delta, lams):
    """xi_c(z), its Jacobian and t for every row z of Z, and whether every solve converged: t solves
    t - z - Delta F_c(t) = 0 (optimistix's Newton from t = z), xi_c = F_c(t) and
    J_c = (I - J_F Delta)^{-1} J_F."""
    k = Z.shape[1]

    def one(z):
        residual = lambda t, _: t - z - Delta @ _softmax_F(c, t, lams)[0]
        sol = optx.root_find(residual, _NEWTON, z, max_steps=100, throw=False)
        F, J = _softmax_F(c, sol.value, lams)
        return (
            F,
            jnp.linalg.solve(jnp.eye(k) - J @ Delta, J),
            sol.value,
            sol.result == optx.RESULTS.successful,
        )

    F, J, T, ok = jax.vmap(one)(Z)
    return F, J, T, jnp.all(ok)


def _blocks_trace(C, R, k: int, p: int) -> np.ndarray:
    """(k, k) matrix of tr(C R[a, b]) over the p x p blocks of the pk x pk matrix R."""
    return np.einsum("ij,ajbi->ab", C, R.reshape(k, p, k, p))


def _draws(G, m, S) -> np.ndarray:
    """m + S^{1/2} g for every row g of G (common random numbers across iterations)."""
    e, V = np.linalg.eigh((S + S.T) / 2)
    return m + G @ (V * np.sqrt(np.maximum(e, 0.0))).T


def _multiclass_update(state, means, covs, gamma, n, lams, G):
    """One iteration of the k-class fixed point (block comment above): (Delta, m, S) -> the next
    (Delta, m, S), W_bar, and whether every Newton solve for xi converged. Host-side numpy around
    the compiled, vmapped Newton: the pk x pk algebra compiled together with the vmapped Newton
    solves into one program took minutes to build (or to run) at p = 100 and 20000 draws."""
    Delta, m, S = state
    k, p = means.shape
    Mt, Ct, Kop, ok = np.zeros((p, k)), np.zeros((p * k, p * k)), np.zeros((p * k, p * k)), True
    for c in range(k):
        xi, J, _, ok_c = map(np.asarray, _xi_vector(c, _draws(G[c], m[c], S[c]), Delta[c], lams))
        ok &= bool(ok_c)
        Mt += gamma[c] * np.outer(means[c], xi.mean(axis=0))
        Ct += gamma[c] * np.kron(xi.T @ xi / G.shape[1], covs[c])
        Kop += gamma[c] * np.kron(J.mean(axis=0), covs[c])
    R1 = np.linalg.inv(np.eye(p * k) - Kop)
    W_bar = (R1 @ Mt.reshape(-1, order="F")).reshape(p, k, order="F")
    R2 = scipy.linalg.solve_discrete_lyapunov(Kop, Ct)  # R2 = Ct + Kop R2 Kop^T
    new_Delta = np.stack([_blocks_trace(covs[c], R1, k, p) / n for c in range(k)])
    new_S = np.stack([_blocks_trace(covs[c], R2, k, p) / n + W_bar.T @ covs[c] @ W_bar for c in range(k)])
    return (new_Delta, means @ W_bar, new_S), W_bar, ok


def _multiclass_inputs(means, covs, proportions, n, lam):
    means = np.asarray(means, np.float64)
    if means.ndim != 2 or means.shape[0] < 2:
        raise InvalidArgument(f"means must be (k, p) with k >= 2, got shape {means.shape}")
    k, p = means.shape
    covs = np.asarray(covs, np.float64)
    if covs.shape != (k, p, p) or not np.all(np.isfinite(covs)) or not np.all(np.isfinite(means)):
        raise InvalidArgument(f"covs must be finite with shape (k, p, p) = ({k}, {p}, {p}), got {covs.shape}")
    for c in range(k):
        scale = max(np.abs(covs[c]).max(), np.finfo(float).tiny)
        if (
            not np.allclose(covs[c], covs[c].T, atol=1e-12 * scale)
            or np.linalg.eigvalsh(covs[c])[0] < -1e-10 * scale
        ):
            raise InvalidArgument(f"covs[{c}] must be symmetric positive semi-definite")
    gamma = np.asarray(proportions, np.float64)
    if gamma.shape != (k,) or np.any(gamma <= 0) or abs(gamma.sum() - 1) > 1e-9:
        raise InvalidArgument(f"proportions must be {k} positive numbers summing to 1, got {proportions!r}")
    (n,) = runner.positive_ints("n", n, minimum=2)
    lams = np.broadcast_to(np.asarray(lam, np.float64), (k,)).copy()
    if not np.all(np.isfinite(lams)) or np.any(lams <= 0):
        raise InvalidArgument(f"lam must be > 0 (a number or one per class), got {lam!r}")
    return means, covs, gamma, n, lams


@float64
def predict_multiclass(
    means,
    covs,
    proportions,
    n: int,
    lam,
    *,
    key=None,
    seed=None,
    samples: int = 20000,
    tol=1e-9,
    max_iter=200,
) -> MulticlassPrediction:
    """The k-class fixed point (block comment above) and the predicted accuracies of the
    l2-regularised softmax classifier (argmax of the logits W^T x).

    Args:
      means: (k, p) class means.
      covs: (k, p, p) class covariances (positive semi-definite).
      proportions: (k,) class proportions.
      n: training samples.
      lam: l2 weight(s) > 0, one or one per class.
      key: a ``jax.random`` key for the Monte Carlo draws, or
      seed: an int (exactly one of the two).
      samples: draws per class.
    """
    start = time.perf_counter()
    means, covs, gamma, n, lams = _multiclass_inputs(means, covs, proportions, n, lam)
    k, p = means.shape
    key = runner.resolve_key(key, seed)
    (samples,) = runner.positive_ints("samples", samples, minimum=100)
    G = np.asarray(jax.random.normal(key, (k, samples, k), jnp.float64))
    y = (np.zeros((k, k, k)), np.zeros((k, k)), np.stack([np.eye(k)] * k))
    inputs = (means, covs, gamma, n, lams, G)
    change, iterations = np.inf, 0
    while iterations < max_iter and not change <= tol:  # Algorithm 1's iteration, k classes
        new, W_bar, newton_ok = _multiclass_update(y, *inputs)
        change = float(_change(new, y))
        y, iterations = new, iterations + 1
    Delta, m, S = y
    test, train = np.zeros(k), np.zeros(k)
    for c in range(k):
        Z = _draws(G[c], m[c], S[c])
        T = np.asarray(_xi_vector(c, Z, Delta[c], lams)[2])
        test[c] = np.mean(np.argmax(Z, axis=1) == c)
        train[c] = np.mean(np.argmax(T, axis=1) == c)
    return MulticlassPrediction(
        Delta=Delta,
        m=m,
        S=S,
        mean_W=W_bar,
        train_accuracy=train,
        test_accuracy=test,
        overall_train_accuracy=float(gamma @ train),
        overall_test_accuracy=float(gamma @ test),
        iterations=int(iterations),
        wall_s=time.perf_counter() - start,
        **_fixed_point_status(change, tol, newton_ok),
    )


@float64
def sample_multiclass(key, means, covs, proportions, n: int):
    """n Gaussian samples of the k-class mixture, class-major: (X (p, n), labels (n,))."""
    means, covs, gamma, n, _ = _multiclass_inputs(means, covs, proportions, n, 1.0)
    counts = np.floor(gamma * n).astype(int)
    counts[: n - counts.sum()] += 1
    labels = np.repeat(np.arange(len(gamma)), counts)
    return _sample(key, means, covs, labels), labels


@float64
def train_multiclass_softmax(X, labels, lam, grad_tol: float = 1e-10, max_steps: int = 1000) -> SoftmaxFit:
    """W (p, k) minimising mean CE(W^T x) + (1/2) sum_l lambda_l ||w_l||^2, by optax's L-BFGS."""
    start = time.perf_counter()
    (max_steps,) = runner.positive_ints("max_steps", max_steps, minimum=1)
    labels = np.asarray(labels)
    k = int(labels.max()) + 1
    lams = np.broadcast_to(np.asarray(lam, np.float64), (k,))
    out = _lbfgs_multiclass(
        jnp.asarray(X, jnp.float64), jnp.asarray(labels), jnp.asarray(lams), grad_tol, max_steps
    )
    return _fit(out, grad_tol, start)


@functools.partial(jax.jit, static_argnames="max_steps")
def _lbfgs_multiclass(X, y, lams, grad_tol, max_steps):
    W0 = jnp.zeros((X.shape[0], lams.shape[0]), X.dtype)
    return minimise_lbfgs(lambda W: softmax_loss(W, X, y, lams), W0, grad_tol, max_steps)


@float64
def multiclass_accuracy(W, X, labels) -> np.ndarray:
    """(k,) per-class accuracy of argmax_l w_l^T x."""
    pred = np.argmax(np.asarray(W).T @ np.asarray(X), axis=0)
    labels = np.asarray(labels)
    return np.array([np.mean(pred[labels == c] == c) for c in range(W.shape[1])])


@float64
def figure2_rows(
    ps, n: int = 400, lam: float = 20.0, proportion: float = 1 / 3, mean_norm: float = 0.5, seeds=0
):
    """Paper 003's Fig. 2 setting (two classes, means mean_norm e_1 and mean_norm e_2, identity
    covariances, class 0 proportion ``proportion``), one row per p in ``ps``: Theorem 4.8's
    (delta, m, sigma), the predicted accuracies, the fixed point's status and residual, and with
    ``seeds`` > 0 the mean and standard error of as many trained classifiers (seed s: training set
    from key s, test set of 5000 from fold_in(key s, 1)) and how many fits were ``stationary``.
    Yields the rows as they are computed."""
    ps = runner.positive_ints("p", ps)
    (n,) = runner.positive_ints("n", n)
    if not (isinstance(proportion, (int, float)) and 0 < proportion < 1):
        raise InvalidArgument(f"proportion must be in (0, 1), got {proportion!r}")
    if not (isinstance(mean_norm, (int, float)) and math.isfinite(mean_norm) and mean_norm > 0):
        raise InvalidArgument(f"mean_norm must be a finite number > 0, got {mean_norm!r}")
    (seeds,) = runner.positive_ints("seeds", seeds, minimum=0)
    gamma = np.array([proportion, 1 - proportion])
    for p in ps:
        mu = np.zeros((2, p))
        mu[0, 0] = mu[1, 1] = mean_norm
        C = np.stack([np.eye(p)] * 2)
        pred = predict_binary(mu, C, gamma, n, lam)
        row = {"p": p, "n": n, "lam": lam, "proportions": gamma.tolist(), "mean_norm": mean_norm}
        row |= {k: np.asarray(getattr(pred, k)).tolist() for k in ("delta", "m", "sigma")}
        row |= {
            "predicted_train_accuracy": pred.overall_train_accuracy,
            "predicted_test_accuracy": pred.overall_test_accuracy,
            "status": str(pred.status),
            "residual": pred.residual,
        }
        if seeds:
            train, test, stationary = [], [], 0
            for s in range(seeds):
                X, y = sample_mixture(jax.random.key(s), mu, C, gamma, n)
                Xt, yt = sample_mixture(jax.random.fold_in(jax.random.key(s), 1), mu, C, gamma, 5000)
                fit = train_binary_softmax(X, y, lam)
                stationary += fit.status == Status.STATIONARY
                train.append(gamma @ binary_accuracy(fit.weights, X, y))
                test.append(gamma @ binary_accuracy(fit.weights, Xt, yt))
            for name, v in (("train", train), ("test", test)):
                row[f"empirical_{name}_accuracy"] = float(np.mean(v))
                row[f"empirical_{name}_se"] = (
                    float(np.std(v, ddof=1) / np.sqrt(len(v))) if len(v) > 1 else None
                )
            row["empirical_fits_stationary"] = int(stationary)
        yield row
