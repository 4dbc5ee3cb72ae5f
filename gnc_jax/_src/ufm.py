"""The unconstrained features model (UFM) with temperature-scaled cross-entropy, batched.

Spherical UFM, eq. (2): W in OB(d, K), H in OB(d, n K) (class-major), minimise the mean
CE(W^T h_{k,i} / tau, y_k). The solver minimises the equivalent log-space loss L_0 of eq. (C.2),
which stays finite with an O(1) gradient down to tau = 1e-3 and below, where the CE itself underflows
to 0. Weight-decay UFM, eq. (B.1): W, H unconstrained, mean CE + (lambda / 2)(||W||^2 + ||H||^2).

Every instance (d, K, n, tau, lambda) runs ``restarts`` random starts through the shared driver
(:func:`gnc_jax._src.driver.run_schedule`): a continuation in tau from ``tau_start`` down to the target
(warm-started, step proportional to tau), then ``hold_steps`` at the target with the step decaying
geometrically to ``final_rate`` of its value so that Adam settles. The restart with the lowest loss
is returned with its Riemannian gradient norm and its GNC metrics, recomputed in float64 from
(W, H) by :mod:`gnc_jax._src.metrics`. Instances are grouped into buckets by (d, K, n) sizes exactly as
in :mod:`gnc_jax._src.batch` (one compilation per bucket; tau and lambda are traced).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from gnc_jax._src import geometry, metrics, runner
from gnc_jax._src.process import float64
from gnc_jax._src.progress import step_meter
from gnc_jax._src.driver import (
    MAX_STEPS,
    NONFINITE,
    STATIONARY,
    STATUS_NAMES,
    ValidatedSettings,
    axis_map,
    euclidean_adam,
    geometric,
    retract,
    riemannian_adam,
    run_schedule,
)
from gnc_jax._src.errors import InvalidArgument
from gnc_jax._src.objectives import hardmax_problem, ufm_log_loss, ufm_mean_ce, weight_decay_ufm_loss
from gnc_jax._src.sphere import normalize_columns, tangent_project
from gnc_jax._src.status import SolutionCore


@dataclasses.dataclass(frozen=True)
class UFMSettings(ValidatedSettings):
    """Immutable UFM solver settings (validated on construction).

    Attributes:
      restarts: random starts per instance.
      steps: steps of the continuation from ``tau_start`` to the target tau (geometric).
      hold_steps: steps at the target tau, the step size decaying to ``final_rate`` of its value.
      tau_start: temperature the continuation starts from (the target if that is larger).
      learning_rate: Adam step per unit temperature.
      final_rate: factor the step decays by over the hold.
      grad_tol: status 'stationary' when the (Riemannian) gradient norm of the solved loss is below.
      dtype: 'float64' or 'float32' (metrics are always float64).
    """

    restarts: int = 8
    steps: int = 2000
    hold_steps: int = 2000
    tau_start: float = 1.0
    learning_rate: float = 0.3
    final_rate: float = 1e-3
    grad_tol: float = 1e-6
    dtype: str = "float64"

    def __post_init__(self):
        self._require_ints(("restarts", "steps", "hold_steps"), 1)
        self._require_positive(("tau_start", "learning_rate", "final_rate", "grad_tol"))
        self._require_dtype()


@dataclasses.dataclass(frozen=True)
class UFMSolution(SolutionCore):
    """Best of the restarts for one instance, with float64 metrics.

    Attributes:
      d, K, n, tau, weight_decay: the instance (weight_decay 0: spherical UFM, eq. 2).
      W: (d, K) classifier; H: (d, n K) features, class-major.
      loss: mean CE of eq. (2) (plus the weight-decay term for eq. B.1), float64; may be 0 to
        float64 precision at small tau, where ``log_loss`` still resolves it.
      log_loss: tau log sum CE, eq. (C.2) (spherical only; NaN with weight decay).
      residual (also ``grad_norm``): norm of the (Riemannian, for the sphere) gradient of the solved
        loss.
      status: 'stationary' (residual <= grad_tol), 'max_steps' or 'nonfinite'
        (:class:`gnc_jax._src.status.Status`).
      gnc1, gnc2, gnc3, ncc_accuracy: :mod:`gnc_jax._src.metrics` (GNC2 on the normalised W).
      gnc2_lower: certified lower bound on GNC2 (equal to it within 1e-12 unless d and K are large,
        where :func:`gnc_jax._src.geometry.separation` brackets it, ranking by the class means).
      max_cos, min_angle_deg: of the normalised W.
      restarts, wall_s: population size; wall time of the bucket (compile included) per instance.
    """

    d: int
    K: int
    n: int
    tau: float
    weight_decay: float
    W: np.ndarray
    H: np.ndarray
    loss: float
    log_loss: float
    gnc1: float
    gnc2: float
    gnc2_lower: float
    gnc3: float
    ncc_accuracy: float
    max_cos: float
    min_angle_deg: float

    @property
    def grad_norm(self) -> float:
        return self.residual

    def summary(self) -> dict:
        """JSON-ready dict of the scalar fields (``residual`` is the gradient norm, also as ``grad_norm``)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("W", "H")}
        return fields | self.core_summary() | {"grad_norm": self.residual}


def _instance_loss(n: int, weight_decay: bool):
    if weight_decay:
        return lambda p, cm, t, lam: weight_decay_ufm_loss(p, cm, t, n, lam)
    return lambda p, cm, t, lam: ufm_log_loss(p, cm, t, n)


@functools.cache
def _bucket_solver(
    settings: UFMSettings, d_max: int, K_max: int, n: int, weight_decay: bool, n_dev: int, report: bool
):
    problem = hardmax_problem(n)  # its (W, H) layout and random init on OB(d, K) x OB(d, n K)
    loss = _instance_loss(n, weight_decay)
    constrain = runner.restart_constraint(n_dev)
    s = settings
    dtype = jnp.dtype(s.dtype)

    def instance(key, d, K, tau, lam):
        params, _, col_mask = axis_map(lambda k: problem.init(k, d, K, d_max, K_max, dtype), s.restarts)(
            jax.random.split(key, s.restarts)
        )
        params, col_mask = constrain(params), col_mask[0]
        tau, lam = tau.astype(dtype), lam.astype(dtype)
        t0 = jnp.maximum(jnp.asarray(s.tau_start, dtype), tau)
        temps = jnp.concatenate(
            [
                t0 * (tau / t0) ** (jnp.arange(s.steps, dtype=dtype) / max(s.steps - 1, 1)),
                jnp.full((s.hold_steps,), tau),
            ]
        )
        rates = s.learning_rate * jnp.concatenate(
            [jnp.ones(s.steps, dtype), geometric(1.0, s.final_rate, s.hold_steps).astype(dtype)]
        )
        value_and_grad = jax.value_and_grad(lambda p, t: loss(p, col_mask, t, lam))
        masks = problem.column_masks(col_mask)
        if weight_decay:  # (B.1): W, H in R^{d x K}, R^{d x nK}
            optimizer, project = euclidean_adam(masks), lambda p: p
        else:
            optimizer, project = riemannian_adam(masks), retract
        state = axis_map(
            lambda p: run_schedule(
                value_and_grad, p, optimizer, project, temps, rates * temps, 0 if report else None
            ),
            s.restarts,
        )(params)
        final = axis_map(lambda p: loss(p, col_mask, tau, lam), s.restarts)(state.params)
        final = jnp.where(state.done | ~jnp.isfinite(final), jnp.inf, final)
        best = jnp.argmin(final)
        p = jax.tree_util.tree_map(lambda a: a[best], state.params)
        g = jax.grad(lambda q: loss(q, col_mask, tau, lam))(p)
        if not weight_decay:
            g = {k: tangent_project(p[k], v) for k, v in g.items()}
        grad_norm = jnp.sqrt(sum(jnp.sum((v * masks[k]) ** 2) for k, v in g.items()))
        status = jnp.where(
            ~jnp.isfinite(final[best]), NONFINITE, jnp.where(grad_norm <= s.grad_tol, STATIONARY, MAX_STEPS)
        )
        p64 = {k: v.astype(jnp.float64) for k, v in p.items()}
        if s.dtype != "float64" and not weight_decay:  # back onto the sphere in float64
            p64 = {k: normalize_columns(v) for k, v in p64.items()}
        return p64, grad_norm, status

    def run(keys, ds, Ks, taus, lams):
        return axis_map(instance, keys.shape[0])(keys, ds, Ks, taus, lams)

    return jax.jit(run)


@float64
def solve_ufm(
    d: int | Sequence[int],
    K: int | Sequence[int],
    n: int | Sequence[int],
    tau: float | Sequence[float],
    *,
    weight_decay: float = 0.0,
    key: jax.Array | None = None,
    seed: int | None = None,
    solver: UFMSettings | None = None,
    progress=None,
) -> UFMSolution | list[UFMSolution]:
    """Solve the UFM for every instance of the grid d x K x n x tau (one compiled call per bucket).

    Args:
      d: integer(s) >= 2.
      K: integer(s) >= 2.
      n: features per class, integer(s) >= 1.
      tau: temperature(s) > 0.
      weight_decay: lambda >= 0 of eq. (B.1); 0 solves the spherical UFM of eq. (2).
      key: a ``jax.random`` key, or
      seed: an int (exactly one of the two); a seed fully determines the result.
      solver: :class:`UFMSettings` (defaults if None), e.g. ``UFMSettings(restarts=8)``.
      progress: a text stream (e.g. ``sys.stderr``) for a line after each bucket and, while a
        bucket's compiled solve runs longer than 10 s, a line every 10 s (steps done, ETA); or None.

    Returns:
      A `UFMSolution` when every argument is a scalar, else a list in grid order
      (d, K, n, tau; the last varies fastest).
    """
    ds = runner.positive_ints("d", d)
    Ks = runner.positive_ints("K", K)
    ns = runner.positive_ints("n", n, minimum=1)
    taus = runner.positive_floats("tau", tau)
    grid = [(dd, kk, nn, tt) for dd in ds for kk in Ks for nn in ns for tt in taus]
    out = solve_ufm_instances(
        grid,
        weight_decay=weight_decay,
        key=key,
        seed=seed,
        solver=solver,
        progress=progress,
    )
    scalar = all(np.ndim(v) == 0 for v in (d, K, n, tau))
    return out[0] if scalar else out


@float64
def solve_ufm_instances(
    instances: Sequence[tuple[int, int, int, float]],
    *,
    weight_decay: float = 0.0,
    key: jax.Array | None = None,
    seed: int | None = None,
    solver: UFMSettings | None = None,
    progress=None,
) -> list[UFMSolution]:
    """Solve the UFM for a list of (d, K, n, tau) instances (one compiled call per bucket); see
    :func:`solve_ufm`. An instance's result depends on the key, the instance and the settings only."""
    instances = list(instances)
    if not instances:
        raise InvalidArgument("instances is empty")
    grid = []
    for inst in instances:
        if not (isinstance(inst, (tuple, list)) and len(inst) == 4):
            raise InvalidArgument(f"instances must hold (d, K, n, tau) tuples, got {inst!r}")
        dd, kk, nn, tt = inst
        (dd,), (kk,) = runner.positive_ints("d", dd), runner.positive_ints("K", kk)
        (nn,), (tt,) = runner.positive_ints("n", nn, minimum=1), runner.positive_floats("tau", tt)
        grid.append((dd, kk, nn, tt))
    (lam,) = runner.positive_floats("weight_decay", weight_decay, allow_zero=True)
    key = runner.resolve_key(key, seed)
    settings = UFMSettings.given("solver", solver)
    n_dev = runner.device_count()
    settings = settings.replace(restarts=runner.round_to_devices(settings.restarts, n_dev))

    def bucket_of(i):
        dd, kk, nn, _ = grid[i]
        return runner.bucket_size(dd), runner.bucket_size(kk, minimum=8), nn

    def solve(bucket, members, padded):
        d_max, K_max, nn = bucket
        ds, Ks, _, taus = zip(*[grid[i] for i in padded])
        keys = jnp.stack([runner.instance_key(key, *grid[i], lam) for i in padded])
        fn = _bucket_solver(settings, d_max, K_max, nn, lam > 0, n_dev, progress is not None)
        taus, lams = jnp.asarray(taus, jnp.float64), jnp.full(len(padded), lam, jnp.float64)
        label = f"solve ufm (d <= {d_max}, K <= {K_max}, n = {nn}, {len(members)} instance(s))"
        with step_meter(progress, label, settings.steps + settings.hold_steps):
            return jax.device_get(fn(keys, jnp.asarray(ds), jnp.asarray(Ks), taus, lams))

    def finish(bucket, members, raw, wall):
        params, grad_norm, status = raw
        return [
            _solution(settings, *grid[i], lam, params, slot, grad_norm, status, wall)
            for slot, i in enumerate(members)
        ]

    return runner.run_buckets(len(grid), bucket_of, solve, finish, progress, "solve ufm")


def _solution(settings, d, K, n, tau, lam, params, slot, grad_norm, status, wall) -> UFMSolution:
    W = np.array(params["W"][slot, :d, :K])
    H = np.array(params["H"][slot, :d, : n * K])
    cm = jnp.ones(K, bool)
    p = {"W": jnp.asarray(W), "H": jnp.asarray(H)}
    if lam > 0:
        loss = float(weight_decay_ufm_loss(p, cm, tau, n, lam))
        log_loss = float("nan")
    else:
        loss = float(ufm_mean_ce(p, cm, tau, n))
        log_loss = float(ufm_log_loss(p, cm, tau, n))
    labels = metrics.class_major_labels(K, n)
    Wn = geometry.validate_configuration(W)
    means = metrics.class_means(H, labels, K)
    means = np.where(np.linalg.norm(means, axis=0) > 0, means, Wn)  # a zero mean ranks by w_k instead
    sep = geometry.separation(Wn, directions=means)
    return UFMSolution(
        d=d,
        K=K,
        n=n,
        tau=tau,
        weight_decay=lam,
        W=W,
        H=H,
        loss=loss,
        log_loss=log_loss,
        residual=float(grad_norm[slot]),
        status=STATUS_NAMES[int(status[slot])],
        gnc1=metrics.gnc1(H, labels),
        gnc2=float(sep.rho_one_vs_rest),
        gnc2_lower=float(sep.rho_lower),
        gnc3=metrics.gnc3(W, H, labels),
        ncc_accuracy=metrics.ncc_accuracy(H, labels),
        max_cos=geometry.max_cos(Wn),
        min_angle_deg=geometry.min_angle_deg(Wn),
        restarts=settings.restarts,
        wall_s=wall,
    )
