"""Imbalanced UFM with non-negative features: closed form, batched solver, minority collapse.

Problem (4) of Dang et al. (``../shared/papers/002``), with class sizes n_1..n_K, N = sum n_k, no bias:

    min_{W, H >= 0}  (1/N) sum_k sum_i CE(W^T h_{k,i}, k) + (lambda_W / 2) ||W||^2 + (lambda_H / 2) ||H||^2.

Layout as in the rest of gnc_jax: W is (d, K) with column w_k the classifier of class k (the paper's
W is our W^T), H is (d, N) class-major (the first n_1 columns are class 0, and so on).

**Closed form** (:func:`predict_imbalanced`, the paper's Theorem 1 following its proof, Section 7).
Jensen's inequality over the samples of a class, the non-negativity h_k^T h_l >= 0 and the AM-GM
inequality on the regularisers give, per class l with c_l = sqrt(lambda_W lambda_H n_l (K-1)/K),
the lower bound

    loss >= sum_l (n_l/N) log(1 + (K-1) e^{-p_l}) + c_l p_l,   p_l = max(0, log((K-1)(1/s_l - 1))),

with s_l = c_l N / n_l = N sqrt(lambda_W lambda_H (K-1)/K) / sqrt(n_l) (p_l is the optimal logit
margin a_l t_l). It is attained when (i) the features of class l all equal its mean a_l u_l, with
u_1..u_K orthonormal (a general orthogonal frame; non-negative orthonormal vectors, so d >= the
number of non-collapsed classes is needed), (ii) w_j = sum_l t_l (delta_jl - 1/K) u_l, and (iii)
lambda_W (K-1)/K t_l^2 = lambda_H n_l a_l^2. Eliminating t through (iii), each classifier is a
scaled and centred combination of the class means:

    w_j = sqrt(lambda_H K / (lambda_W (K-1))) (sqrt(n_j) mean_j - (1/K) sum_l sqrt(n_l) mean_l).

Class l collapses (p_l = a_l = t_l = 0: its mean vanishes and its classifier equals every other
collapsed class's, "minority collapse") iff n_l <= N^2 lambda_W lambda_H K / (K - 1), the n_l
at which the unclipped margin log((K-1)(1/s_l - 1)) reaches 0.

**Solver** (:func:`solve_ufm_imbalanced`): projected Adam (the shared driver
:func:`gnc_jax._src.driver.run_schedule`: :func:`gnc_jax._src.driver.euclidean_adam`, then the projection
onto H >= 0) from a large non-negative start, with a
continuation on the regularisers (scaled by ``lambda_start`` -> 1 over ``steps``), then
``hold_steps`` with the step decaying to ``final_rate``. A small start with the full regularisers
tends to a spurious KKT point where minority features are exactly 0 (docs/decisions.md); the continuation
lets every class separate before the regularisers bite, and it starts from class-balanced sample
weights so that a minority class does not lose its coordinate to the majorities early on. Since
the closed form is a lower bound for every d, ``loss - lower_bound`` certifies global optimality:
status ``optimal`` only when it is below ``gap_tol``; a KKT point above the bound is ``stationary``
(spurious when d is large enough; the bound is not attainable when d < ``prediction.min_dimension``).

**d smaller than the number of surviving classes** (allowed, documented): at most d non-negative
means can be orthogonal. The terms decouple per class, so the best orthogonal-frame configuration
collapses the classes whose term rises least (to (n_l/N) log K); :func:`predict_imbalanced` with
``d`` returns it, the solver finds it (d = 3, counts (20, 20, 5, 2), lambda = 5e-3: both give
0.3021169681, above the bound 0.2673849707), and its status is ``stationary`` because no
certificate of global optimality exists there.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnc_jax._src import metrics, runner
from gnc_jax._src.process import float64
from gnc_jax._src.driver import ValidatedSettings, axis_map, euclidean_adam, geometric, run_schedule
from gnc_jax._src.errors import InvalidArgument
from gnc_jax.related._optim import cross_entropy
from gnc_jax._src.status import SolutionCore, Status

OPTIMAL, STATIONARY, MAX_STEPS, NONFINITE = (
    Status.OPTIMAL,
    Status.STATIONARY,
    Status.MAX_STEPS,
    Status.NONFINITE,
)


def _counts(counts, name: str = "counts") -> np.ndarray:
    arr = np.asarray(counts)
    if arr.ndim != 1 or arr.size < 2:
        raise InvalidArgument(f"{name} must be a sequence of K >= 2 class sizes, got {counts!r}")
    numeric = np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    if arr.dtype == bool or not numeric or not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
        raise InvalidArgument(f"{name} must hold integers, got {counts!r}")
    if np.any(arr < 1):
        raise InvalidArgument(f"{name} must be >= 1 for every class (class sizes), got {arr.tolist()}")
    return arr.astype(np.int64)


def _one_positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise InvalidArgument(f"{name} must be a number > 0, got {value!r}")
    (v,) = runner.positive_floats(name, value)
    return v


@dataclasses.dataclass(frozen=True)
class ImbalancedPrediction:
    """The closed-form optimum of problem (4) (module docstring) for given class sizes.

    Attributes:
      counts: (K,) class sizes; N their sum; lambda_w, lambda_h the weight decays.
      d: the feature dimension the prediction is for (None: any d >= ``min_dimension``).
      lower_bound: the closed-form bound, valid for every d; the optimal value when d >= min_dimension.
      loss: the value of the predicted configuration (equal to lower_bound unless d < min_dimension).
      margins: (K,) p_l = a_l t_l, the logit margin of class l over every other class.
      feature_norms: (K,) a_l, the norm of class l's features (all equal to its mean).
      classifier_coefficients: (K,) t_l, the length of the classifier along u_l.
      collapsed: (K,) bool: p_l = 0 (minority collapse, or forced by a small d).
      forced_collapse: (K,) bool: collapsed only because d < min_dimension (see
        :func:`predict_imbalanced`).
      collapse_threshold: n* = N^2 lambda_W lambda_H K / (K - 1); class l collapses iff n_l <= n*.
      min_dimension: the number of classes above the threshold; the bound is attained iff d >= it.
    """

    counts: np.ndarray
    N: int
    d: int | None
    lambda_w: float
    lambda_h: float
    lower_bound: float
    loss: float
    margins: np.ndarray
    feature_norms: np.ndarray
    classifier_coefficients: np.ndarray
    collapsed: np.ndarray
    forced_collapse: np.ndarray
    collapse_threshold: float
    min_dimension: int

    @property
    def K(self) -> int:
        return len(self.counts)

    def configuration(self, d: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(W, means): the predicted (d, K) classifier and class means with u_l = e_1, e_2, ... for
        the non-collapsed classes in order (d defaults to ``self.d`` or their number)."""
        alive = np.flatnonzero(~self.collapsed)
        d = (self.d or len(alive)) if d is None else d
        if d < max(len(alive), 1):
            raise InvalidArgument(f"d must be >= {max(len(alive), 1)} (non-collapsed classes), got {d}")
        U = np.zeros((d, self.K))
        U[np.arange(len(alive)), alive] = 1.0
        K = self.K
        W = U @ (np.diag(self.classifier_coefficients) @ (np.eye(K) - np.ones((K, K)) / K))
        return W, U * self.feature_norms

    @property
    def classifier_norms(self) -> np.ndarray:
        return np.linalg.norm(self.configuration()[0], axis=0)

    def summary(self) -> dict:
        """JSON-ready dict."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.tolist() if isinstance(v, np.ndarray) else v
        return out | {"classifier_norms": self.classifier_norms.tolist()}


@float64
def predict_imbalanced(
    counts, lambda_w: float, lambda_h: float, d: int | None = None
) -> ImbalancedPrediction:
    """Closed-form optimum of problem (4) for class sizes ``counts`` (module docstring).

    Every class's term of the bound depends only on its own margin, so the classes decouple. When
    ``d`` is smaller than the number of classes above the threshold, only d means can be
    orthogonal and non-negative: the prediction then collapses the classes whose own term rises
    least, from f_l(p_l) to (n_l / N) log K (the value of a class with zero features). Its ``loss``
    is the best value among such orthogonal-frame configurations, an attainable value but no
    longer a proven optimum; ``lower_bound`` stays the d-free bound, which is then not attained.

    Args:
      counts: K >= 2 positive integers.
      lambda_w: weight decay of W, > 0.
      lambda_h: weight decay of H, > 0.
      d: feature dimension >= 2, or None for any d large enough.

    Returns:
      An :class:`ImbalancedPrediction`: per-class norms, the collapse threshold and pattern, the
      loss and its lower bound, and ``configuration(d)`` for an optimal (W, H).
    """
    n = _counts(counts).astype(np.float64)
    lw, lh = _one_positive("lambda_w", lambda_w), _one_positive("lambda_h", lambda_h)
    if d is not None:
        (d,) = runner.positive_ints("d", d)
    K, N = len(n), float(n.sum())
    c = np.sqrt(lw * lh * n * (K - 1) / K)
    s = N * np.sqrt(lw * lh * (K - 1) / K) / np.sqrt(n)
    arg = (K - 1) * (1.0 / s - 1.0)
    p = np.where(arg > 1.0, np.log(np.where(arg > 1.0, arg, 1.0)), 0.0)
    terms = n / N * np.log1p((K - 1) * np.exp(-p)) + c * p
    above = p > 0.0
    forced = np.zeros(K, bool)
    if d is not None and d < above.sum():
        penalty = np.where(above, n / N * math.log(K) - terms, np.inf)
        forced[np.argsort(penalty, kind="stable")[: above.sum() - d]] = True
    value = np.where(forced, n / N * math.log(K), terms)
    p = np.where(forced, 0.0, p)
    ratio = (lw * (K - 1) / (K * lh * n)) ** 0.25  # a = sqrt(p) ratio, t = sqrt(p) / ratio
    return ImbalancedPrediction(
        counts=n.astype(np.int64),
        N=int(N),
        d=d,
        lambda_w=lw,
        lambda_h=lh,
        lower_bound=float(np.sum(terms)),
        loss=float(np.sum(value)),
        margins=p,
        feature_norms=np.sqrt(p) * ratio,
        classifier_coefficients=np.sqrt(p) / ratio,
        collapsed=p == 0.0,
        forced_collapse=forced,
        collapse_threshold=N**2 * lw * lh * K / (K - 1),
        min_dimension=int(above.sum()),
    )


@float64
def centred_scaled_means(means, counts, lambda_w: float, lambda_h: float) -> np.ndarray:
    """The classifier the theory of problem (4) predicts from any class means: column j is
    sqrt(lambda_H K / (lambda_W (K-1))) (sqrt(n_j) mean_j - (1/K) sum_l sqrt(n_l) mean_l).

    Args:
      means: (d, K) class means.
      counts: K class sizes.
      lambda_w: weight decay of W, > 0.
      lambda_h: weight decay of H, > 0.

    Returns:
      The (d, K) classifier.
    """
    M = np.asarray(means, np.float64)
    n = np.asarray(counts, np.float64)
    K = len(n)
    S = M * np.sqrt(n)
    return math.sqrt(lambda_h * K / (lambda_w * (K - 1))) * (S - S.mean(axis=1, keepdims=True))


def _cosines(A, B) -> np.ndarray:
    """cos between columns of A and B; NaN where a column is zero."""
    na, nb = np.linalg.norm(A, axis=0), np.linalg.norm(B, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.outer(na, nb) > 0, (A.T @ B) / np.outer(na, nb), np.nan)


def _angles_deg(A, B) -> np.ndarray:
    """Angles between columns of A and B in degrees, 2 atan2(|a - b|, |a + b|) of the unit vectors
    (accurate near 0 and 180 degrees, unlike arccos); NaN where a column is zero."""
    with np.errstate(invalid="ignore", divide="ignore"):
        A, B = A / np.linalg.norm(A, axis=0), B / np.linalg.norm(B, axis=0)
        diff = np.linalg.norm(A[:, :, None] - B[:, None, :], axis=0)
        total = np.linalg.norm(A[:, :, None] + B[:, None, :], axis=0)
        return np.degrees(2 * np.arctan2(diff, total))


def _largest(x) -> float:
    x = np.abs(np.asarray(x, np.float64))
    x = x[np.isfinite(x)]
    return float(x.max()) if x.size else 0.0


@float64
def geometry_report(W, H, counts, lambda_w: float, lambda_h: float, collapse_tol: float = 1e-6) -> dict:
    """Measured geometry of (W, H) for class sizes ``counts`` and its distance to the closed form of
    problem (4) (:func:`predict_imbalanced`).

    Args:
      W, H, counts, lambda_w, lambda_h: as for :func:`imbalanced_loss`.
      collapse_tol: a class mean counts as collapsed below this times the largest mean's norm.

    Returns:
      A dict with ``feature_norms`` (norms of the class means) and ``classifier_norms`` (K,);
      ``collapsed`` (mean norm <= collapse_tol times the largest); ``nc1`` (:func:`gnc_jax.metrics.gnc1`
      with the uncentred Sigma_B, natural for non-negative features whose means form an orthogonal
      frame); ``orthogonality`` (largest |cos| between means of non-collapsed classes);
      ``alignment_error`` (||W - W_hat|| / ||W||, W_hat the :func:`centred_scaled_means` of the
      measured means); ``collapsed_classifier_spread`` (largest distance between classifiers of
      collapsed classes over ||W||: 0 when they merge); and against :func:`predict_imbalanced`:
      ``collapse_matches``, ``norm_error`` (largest relative error of the non-collapsed feature
      norms and of the classifier norms) and ``angle_error_deg`` (largest error of the angles
      between classifiers and between classifiers and non-collapsed means; inf if the collapsed
      sets differ).
    """
    W, H = np.asarray(W, np.float64), np.asarray(H, np.float64)
    if W.ndim != 2 or W.shape[0] < 2:
        raise InvalidArgument(f"W must be a (d, K) array with d >= 2, got shape {W.shape}")
    pred = predict_imbalanced(counts, lambda_w, lambda_h, W.shape[0])
    K = pred.K
    if W.shape[1] != K:
        raise InvalidArgument(f"W must be (d, K) with K = {K} (len(counts)), got shape {W.shape}")
    if H.shape != (W.shape[0], pred.N):
        raise InvalidArgument(f"H must be (d, N) = ({W.shape[0]}, {pred.N}), got shape {H.shape}")
    labels = np.repeat(np.arange(K), pred.counts)
    means = metrics.class_means(H, labels, K)
    a, wn = np.linalg.norm(means, axis=0), np.linalg.norm(W, axis=0)
    collapsed = a <= collapse_tol * a.max()
    alive = ~collapsed
    w_scale = max(np.linalg.norm(W), np.finfo(float).tiny)
    cos_means = _cosines(means[:, alive], means[:, alive])
    W_hat = centred_scaled_means(np.where(collapsed, 0.0, means), counts, lambda_w, lambda_h)
    merged = W[:, collapsed]
    spread = np.linalg.norm(merged[:, :, None] - merged[:, None, :], axis=0)
    matches = bool(np.array_equal(collapsed, pred.collapsed))
    Wp, Mp = pred.configuration()
    a_p, w_p = pred.feature_norms, np.linalg.norm(Wp, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        norm_error = _largest(np.concatenate([(a - a_p)[alive] / a_p[alive], (wn - w_p) / w_p]))
    angle_error = float("inf")
    if matches:
        angle_error = max(
            _largest(_angles_deg(W, W) - _angles_deg(Wp, Wp)),
            _largest(_angles_deg(W, means[:, alive]) - _angles_deg(Wp, Mp[:, alive])),
        )
    return {
        "feature_norms": a,
        "classifier_norms": wn,
        "collapsed": collapsed,
        "nc1": metrics.gnc1(H, labels, K=K) if alive.any() else 0.0,
        "orthogonality": _largest(cos_means[~np.eye(alive.sum(), dtype=bool)]),
        "alignment_error": float(np.linalg.norm(W - W_hat) / w_scale),
        "collapsed_classifier_spread": _largest(spread) / w_scale,
        "collapse_matches": matches,
        "norm_error": norm_error,
        "angle_error_deg": angle_error,
    }


@dataclasses.dataclass(frozen=True)
class ImbalancedSettings(ValidatedSettings):
    """Immutable settings of the imbalanced-UFM solver (validated on construction).

    Attributes:
      restarts: random starts per instance (the lowest loss is kept).
      steps: continuation steps: the regularisers grow geometrically from ``lambda_start`` times
        their value to their value, at a constant step.
      hold_steps: steps at the full regularisers, the step decaying to ``final_rate`` of its value.
      lambda_start: the continuation's starting fraction of lambda_W and lambda_H, in (0, 1].
      learning_rate: Adam step.
      final_rate: factor the step decays by over the hold.
      init_scale: starting entries are init_scale / sqrt(d) times N(0, 1) (W) and |N(0, 1)| (H).
      balanced_start: along the continuation the per-sample weights also move from class-balanced
        (1 / (K n_k)) to 1 / N, so that the path starts at the balanced problem, where every class
        owns a coordinate, and minority classes shrink continuously instead of losing their
        coordinate early (K = 10, counts 1000 x 5 and 10 x 5, lambda_W at 0.5-0.85 of the
        threshold: 11 of 12 restarts reach the optimum with it, 5 of 12 without).
      grad_tol: KKT residual (projected gradient norm) below which a point counts as stationary.
      gap_tol: loss - lower bound below which a stationary point is certified globally optimal.
      dtype: 'float64' or 'float32' (the report is always float64; float32 points reach a KKT
        residual near 1e-7, so raise grad_tol to match; a class counts as collapsed below 1e-4
        of the largest mean norm instead of 1e-6).
    """

    restarts: int = 8
    steps: int = 10000
    hold_steps: int = 10000
    lambda_start: float = 0.01
    learning_rate: float = 0.05
    final_rate: float = 1e-3
    init_scale: float = 3.0
    balanced_start: bool = True
    grad_tol: float = 1e-8
    gap_tol: float = 1e-12
    dtype: str = "float64"

    def __post_init__(self):
        self._require_ints(("restarts", "steps", "hold_steps"), 1)
        self._require_positive(
            ("lambda_start", "learning_rate", "final_rate", "init_scale", "grad_tol", "gap_tol")
        )
        if self.lambda_start > 1:
            raise InvalidArgument(f"lambda_start must be in (0, 1], got {self.lambda_start}")
        self._require_dtype()


@dataclasses.dataclass(frozen=True)
class ImbalancedSolution(SolutionCore):
    """Best restart for one instance of problem (4), with its certificate and geometry.

    Attributes:
      counts, d, lambda_w, lambda_h: the instance; W (d, K), H (d, N) class-major.
      loss: objective of problem (4) in float64.
      lower_bound: the closed-form value (:attr:`prediction`); optimality_gap = loss - lower_bound.
      residual (also ``kkt_residual``): norm of the projected gradient (the gradient of W; of H
        where H > 0 or where it points into H > 0).
      status: 'optimal' (KKT residual <= grad_tol and gap <= gap_tol: a certified global optimum),
        'stationary' (KKT residual <= grad_tol, loss above the bound: spurious if d >=
        ``prediction.min_dimension``, else possibly optimal for this d), 'max_steps' (KKT residual
        above grad_tol), 'nonfinite'.
      restart_losses: (restarts,) final losses of every restart (in the solver's dtype).
      restarts_at_optimum: how many of them are within gap_tol of the bound.
      prediction: :class:`ImbalancedPrediction`; report: :func:`geometry_report` of (W, H).
      wall_s: wall time of the batched call (compile included) per instance.
    """

    counts: tuple
    d: int
    lambda_w: float
    lambda_h: float
    W: np.ndarray
    H: np.ndarray
    loss: float
    lower_bound: float
    optimality_gap: float
    restart_losses: np.ndarray
    restarts_at_optimum: int
    prediction: ImbalancedPrediction
    report: dict

    @property
    def kkt_residual(self) -> float:
        return self.residual

    @property
    def K(self) -> int:
        return len(self.counts)

    def summary(self) -> dict:
        """JSON-ready dict: the scalars, per-class lists and the prediction beside the measurement."""
        out = {
            "K": self.K,
            "d": self.d,
            "counts": list(self.counts),
            "lambda_w": self.lambda_w,
            "lambda_h": self.lambda_h,
            "loss": self.loss,
            "lower_bound": self.lower_bound,
            "optimality_gap": self.optimality_gap,
            "kkt_residual": self.kkt_residual,
            "restarts_at_optimum": self.restarts_at_optimum,
        } | self.core_summary()
        for k, v in self.report.items():
            out[k] = v.tolist() if isinstance(v, np.ndarray) else v
        p = self.prediction
        out |= {
            "predicted_feature_norms": p.feature_norms.tolist(),
            "predicted_classifier_norms": p.classifier_norms.tolist(),
            "predicted_collapsed": p.collapsed.tolist(),
            "predicted_loss": p.loss,
            "dimension_forced_collapse": p.forced_collapse.tolist(),
            "collapse_threshold": p.collapse_threshold,
            "min_dimension": p.min_dimension,
        }
        return out


def _loss(params, labels, weights, lambda_w, lambda_h):
    W, H = params["W"], params["H"]
    Z = W.T @ H  # (K, N) logits
    return (
        jnp.sum(weights * cross_entropy(Z, labels))
        + 0.5 * lambda_w * jnp.sum(W**2)
        + 0.5 * lambda_h * jnp.sum(H**2)
    )


_value_and_grad = jax.jit(jax.value_and_grad(_loss))


def _float64_problem(W, H, counts):
    n = _counts(counts)
    p = {"W": jnp.asarray(W, jnp.float64), "H": jnp.asarray(H, jnp.float64)}
    labels = jnp.asarray(np.repeat(np.arange(len(n)), n))
    return p, labels, jnp.full(int(n.sum()), 1.0 / n.sum())


def _clip_features(params):
    """The projection onto the constraint set of problem (4): H >= 0 (the non-negative orthant)."""
    return {"W": params["W"], "H": optax.projections.projection_non_negative(params["H"])}


@functools.cache
def _batch_solver(settings: ImbalancedSettings, d: int, K: int, N_max: int, n_dev: int):
    s = settings
    dtype = jnp.dtype(s.dtype)
    constrain = runner.restart_constraint(n_dev)
    scales = jnp.concatenate([geometric(s.lambda_start, 1.0, s.steps), jnp.ones(s.hold_steps)]).astype(dtype)
    rates = s.learning_rate * jnp.concatenate(
        [jnp.ones(s.steps), geometric(1.0, s.final_rate, s.hold_steps)]
    ).astype(dtype)

    def instance(key, labels, weights, lambda_w, lambda_h):
        col_mask = (weights > 0).astype(dtype)
        weights, lambda_w, lambda_h = weights.astype(dtype), lambda_w.astype(dtype), lambda_h.astype(dtype)
        masks = {"W": jnp.ones(K, dtype), "H": col_mask}

        def init(k):
            kw, kh = jax.random.split(k)
            scale = s.init_scale / math.sqrt(d)
            return {
                "W": scale * jax.random.normal(kw, (d, K), dtype),
                "H": scale * jnp.abs(jax.random.normal(kh, (d, N_max), dtype)) * col_mask,
            }

        params = constrain(axis_map(init, s.restarts)(jax.random.split(key, s.restarts)))
        counts = jnp.zeros(K, dtype).at[labels].add(col_mask)
        balanced = col_mask / (K * counts[labels])
        span = math.log(1.0 / s.lambda_start) if s.lambda_start < 1 else 1.0

        def loss(p, t):  # t: the continuation's regulariser scale, lambda_start -> 1
            if not s.balanced_start:
                return _loss(p, labels, weights, t * lambda_w, t * lambda_h)
            frac = jnp.clip(jnp.log(t / s.lambda_start) / span, 0.0, 1.0) if s.lambda_start < 1 else 1.0
            w = (1 - frac) * balanced + frac * weights
            return _loss(p, labels, w, t * lambda_w, t * lambda_h)

        value_and_grad = jax.value_and_grad(loss)
        optimizer = euclidean_adam(masks)
        state = axis_map(
            lambda p: run_schedule(value_and_grad, p, optimizer, _clip_features, scales, rates), s.restarts
        )(params)
        final = axis_map(lambda p: loss(p, jnp.asarray(1.0, dtype)), s.restarts)(state.params)
        final = jnp.where(state.done | ~jnp.isfinite(final), jnp.inf, final)
        best = jnp.argmin(final)
        p = jax.tree_util.tree_map(lambda a: a[best].astype(jnp.float64), state.params)
        return p, final.astype(jnp.float64)

    def run(keys, labels, weights, lambda_w, lambda_h):
        return axis_map(instance, keys.shape[0])(keys, labels, weights, lambda_w, lambda_h)

    return jax.jit(run)


def _loss_and_kkt(W, H, counts, lambda_w: float, lambda_h: float) -> tuple[float, float]:
    p, labels, weights = _float64_problem(W, H, counts)
    value, g = _value_and_grad(p, labels, weights, lambda_w, lambda_h)
    gH = jnp.where(p["H"] > 0, g["H"], jnp.minimum(g["H"], 0.0))
    return float(value), float(jnp.sqrt(jnp.sum(g["W"] ** 2) + jnp.sum(gH**2)))


@float64
def kkt_residual(W, H, counts, lambda_w: float, lambda_h: float) -> float:
    """Norm of the projected gradient of problem (4) at (W, H >= 0), in float64: the gradient of W,
    and of H where H > 0 or where it points into H > 0 (0 at a KKT point).

    Args:
      W, H, counts, lambda_w, lambda_h: as for :func:`imbalanced_loss`.

    Returns:
      The residual.
    """
    return _loss_and_kkt(W, H, counts, lambda_w, lambda_h)[1]


@float64
def imbalanced_loss(W, H, counts, lambda_w: float, lambda_h: float) -> float:
    """The objective of problem (4): mean cross-entropy of W^T H plus (lambda_W/2) ||W||^2 +
    (lambda_H/2) ||H||^2, in float64.

    Args:
      W: (d, K) classifier.
      H: (d, N) non-negative features, class-major (``counts[k]`` columns per class).
      counts: K class sizes.
      lambda_w: weight decay of W, > 0.
      lambda_h: weight decay of H, > 0.

    Returns:
      The objective.
    """
    return _loss_and_kkt(W, H, counts, lambda_w, lambda_h)[0]


def _profiles(counts) -> tuple[list[np.ndarray], bool]:
    """One profile (K integers) or a sequence of profiles with the same K; returns (profiles, single)."""
    try:
        first = counts[0]
    except (TypeError, IndexError, KeyError):
        raise InvalidArgument(
            f"counts must be K class sizes or a sequence of such profiles, got {counts!r}"
        ) from None
    if np.ndim(first) == 0:
        return [_counts(counts)], True
    profiles = [_counts(c, f"counts[{i}]") for i, c in enumerate(counts)]
    Ks = {len(c) for c in profiles}
    if len(Ks) > 1:
        raise InvalidArgument(f"every profile in counts must have the same K, got lengths {sorted(Ks)}")
    return profiles, False


@float64
def solve_ufm_imbalanced(
    counts,
    d: int,
    lambda_w: float | Sequence[float],
    lambda_h: float | Sequence[float],
    *,
    key: jax.Array | None = None,
    seed: int | None = None,
    solver: ImbalancedSettings | None = None,
) -> ImbalancedSolution | list[ImbalancedSolution]:
    """Solve problem (4) for every (profile, lambda_W, lambda_H) of a grid in one compiled call.

    Args:
      counts: K >= 2 class sizes, or a sequence of profiles with the same K (padded to the largest N;
        padded columns carry zero weight and stay at 0).
      d: feature dimension >= 2. The closed form is attained only for d >= the number of
        non-collapsed classes; for smaller d the solver still runs and ``optimality_gap`` > 0 is the
        distance to the (then unattainable) bound.
      lambda_w: weight decay(s) of W, > 0 (a number or a sequence; the grid is the product).
      lambda_h: weight decay(s) of H, the same.
      key: a ``jax.random`` key, or
      seed: an int (exactly one of the two); a seed fully determines the result.
      solver: :class:`ImbalancedSettings` (defaults if None).

    Returns:
      An `ImbalancedSolution` for one profile and scalar lambdas, else a list in grid order
      (profile, lambda_w, lambda_h; the last varies fastest).
    """
    # Long because validation, the batched solve and the per-instance report belong to one call.
    profiles, single = _profiles(counts)
    (d,) = runner.positive_ints("d", d)
    lws = runner.positive_floats("lambda_w", lambda_w)
    lhs = runner.positive_floats("lambda_h", lambda_h)
    key = runner.resolve_key(key, seed)
    settings = ImbalancedSettings.given("solver", solver)
    n_dev = runner.device_count()
    settings = settings.replace(restarts=runner.round_to_devices(settings.restarts, n_dev))
    K = len(profiles[0])
    grid = [(c, lw, lh) for c in profiles for lw in lws for lh in lhs]
    N_max = max(int(c.sum()) for c in profiles)
    N_max = N_max if len(profiles) == 1 else runner.bucket_size(N_max)

    def solve(bucket, members, padded):  # one bucket: the whole grid
        labels = np.zeros((len(padded), N_max), np.int32)
        weights = np.zeros((len(padded), N_max))
        for row, i in enumerate(padded):
            c = grid[i][0]
            labels[row, : c.sum()] = np.repeat(np.arange(K), c)
            weights[row, : c.sum()] = 1.0 / c.sum()
        keys = jnp.stack([runner.instance_key(key, *grid[i][0], *grid[i][1:]) for i in padded])
        lambda_ws, lambda_hs = (jnp.asarray([grid[i][j] for i in padded]) for j in (1, 2))
        fn = _batch_solver(settings, d, K, N_max, n_dev)
        return jax.device_get(fn(keys, jnp.asarray(labels), jnp.asarray(weights), lambda_ws, lambda_hs))

    def finish(bucket, members, raw, wall):
        params, losses = raw
        return [
            _solution(
                settings, d, *grid[i], params["W"][s], params["H"][s, :, : grid[i][0].sum()], losses[s], wall
            )
            for s, i in enumerate(members)
        ]

    out = runner.run_buckets(len(grid), lambda i: 0, solve, finish)
    return out[0] if single and np.ndim(lambda_w) == 0 and np.ndim(lambda_h) == 0 else out


def _solution(settings, d, counts, lambda_w, lambda_h, W, H, restart_losses, wall) -> ImbalancedSolution:
    W, H = np.array(W), np.array(H)
    pred = predict_imbalanced(counts, lambda_w, lambda_h, d)
    finite = np.all(np.isfinite(W)) and np.all(np.isfinite(H)) and np.any(np.isfinite(restart_losses))
    loss, kkt = _loss_and_kkt(W, H, counts, lambda_w, lambda_h) if finite else (float("nan"), float("nan"))
    gap = loss - pred.lower_bound
    collapse_tol = 1e-6 if settings.dtype == "float64" else 1e-4  # float32 Adam jitters around 0
    if finite and math.isfinite(loss) and gap < -settings.gap_tol:
        # A feasible point below a lower bound: the bound (or the loss) is wrong, not the point optimal.
        raise RuntimeError(
            f"imbalanced UFM counts={tuple(int(v) for v in counts)}, d={d}, lambda_w={lambda_w}, "
            f"lambda_h={lambda_h}: loss {loss!r} is below the closed-form lower bound {pred.lower_bound!r} "
            f"by {-gap:.3e} > gap_tol {settings.gap_tol:g}: the bound does not hold here"
        )
    if not finite or not math.isfinite(loss):
        status = NONFINITE
    elif kkt > settings.grad_tol:
        status = MAX_STEPS
    elif gap <= settings.gap_tol:
        status = OPTIMAL
    else:
        status = STATIONARY
    return ImbalancedSolution(
        counts=tuple(int(v) for v in counts),
        d=d,
        lambda_w=lambda_w,
        lambda_h=lambda_h,
        W=W,
        H=H,
        loss=loss,
        lower_bound=pred.lower_bound,
        optimality_gap=gap,
        residual=kkt,
        restarts=len(restart_losses),
        status=status,
        restart_losses=np.asarray(restart_losses),
        restarts_at_optimum=int(np.sum(np.asarray(restart_losses) - pred.lower_bound <= settings.gap_tol)),
        prediction=pred,
        report=geometry_report(W, H, counts, lambda_w, lambda_h, collapse_tol) if finite else {},
        wall_s=wall,
    )
