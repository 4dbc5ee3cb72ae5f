"""Settings, state and the one shared driver loop for the max-min arrangement problems.

A solve of one (d, K) pair with R restarts runs, inside one jitted function:

1. **anneal**: every restart follows the continuation schedule t_start -> t_end (geometric) of the
   log-sum-exp smoothing, with Riemannian Adam (project the gradient to the tangent space of
   OB(d, K), take the optax update, retract by normalising columns). The step is ``learning_rate * t``
   because the curvature of the smoothing grows like 1/t.
2. **basin hopping** (the global strategy): ``hop_rounds`` rounds in which every member is perturbed
   (Gaussian tangent noise of ``hop_scale`` times the typical spacing K^{-1/(d-1)}), re-annealed from
   ``hop_t_start`` and kept only if its exact score improved; after each round the worse half of
   the population is replaced by copies of the better half, so the budget concentrates on the best
   basins.
3. **polish**: a final continuation down to ``polish_t_end`` so that the smoothing bias sits far
   below the reported digits.

The driver :func:`run_schedule` is a ``lax.scan`` over (temperature, step size) pairs around a pure
step with a per-instance ``done`` flag (frozen on a non-finite loss), shared by all three phases,
both problems, the UFM solvers and the search. A step is an optax chain followed by a projection
onto the constraint set: :func:`riemannian_adam` (tangent projection -> column mask ->
``optax.scale_by_adam`` -> the step ``-step_size * u``) with :func:`retract` on OB(d, K), or
:func:`euclidean_adam` with another projection (``optax.projections.projection_non_negative`` for
the imbalanced UFM's H >= 0). Reported numbers are recomputed exactly by :mod:`gnc_jax._src.geometry`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from gnc_jax._src.progress import report_steps
from gnc_jax._src.errors import InvalidArgument
from gnc_jax._src.objectives import Problem
from gnc_jax._src.process import cpu_cores
from gnc_jax._src.sphere import normalize_columns, tangent_project, term_block
from gnc_jax._src.status import Status

# Status codes inside compiled code (gnc_jax._src.status names them): STATIONARY is used by the UFM
# solvers (gradient norm below tolerance), STALLED by the annealer (score change below tolerance).
STALLED, MAX_STEPS, NONFINITE, STATIONARY = 0, 1, 2, 3
STATUS_NAMES = {
    STALLED: Status.STALLED,
    MAX_STEPS: Status.MAX_STEPS,
    NONFINITE: Status.NONFINITE,
    STATIONARY: Status.STATIONARY,
}


class ValidatedSettings:
    """Shared checks and ``replace`` of the frozen settings dataclasses (errors name the field)."""

    @classmethod
    def given(cls, name: str, value):
        """``value`` if it is one of these settings, the defaults if None; else an error naming the
        argument ``name`` (a solver's ``solver=`` or ``search=``)."""
        if value is None:
            return cls()
        if not isinstance(value, cls):
            raise InvalidArgument(f"{name} must be {cls.__name__} or None, got {type(value).__name__}")
        return value

    def _require_ints(self, names, minimum: int) -> None:
        for name in names:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
                raise InvalidArgument(f"{name} must be an integer >= {minimum}, got {v!r}")

    def _require_positive(self, names) -> None:
        for name in names:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise InvalidArgument(f"{name} must be a finite number > 0, got {v!r}")

    def _require_dtype(self) -> None:
        if self.dtype not in ("float32", "float64"):
            raise InvalidArgument(f"dtype must be 'float32' or 'float64', got {self.dtype!r}")

    def replace(self, **changes):
        """A copy with some fields changed (validated again)."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise InvalidArgument(f"unknown settings {sorted(unknown)}")
        return dataclasses.replace(self, **changes)


# A schedule shortened by the work limit keeps at least this many steps (anneal and polish together,
# 2 : 1 as the defaults), and at least this many steps per decade of temperature: 200 steps cover
# 0.1 -> 6e-4 -> 5e-5 rather than 0.1 -> 1e-10 -> 1e-13 (docs/decisions.md, "The annealer's work limit").
MIN_SCHEDULE_STEPS = 200
STEPS_PER_DECADE = 60

# The default work limit per core of the device, in terms-steps (a CPU core, or a multiprocessor of
# a GPU, did about 5e9 float64 terms a second here): 2e11 on the 2-core CPU, about 20 s of annealing
# (docs/decisions.md, "The annealer's work limit").
WORK_PER_CORE = 1e11


def device_cores() -> int:
    """The cores that share a pair's annealing: the CPU cores this process may use, or the
    multiprocessors of every local accelerator (``Device.core_count``, a GPU's SMs), never fewer than
    the CPU's (an accelerator that reports no count)."""
    devices = jax.local_devices()
    if devices[0].platform == "cpu":
        return cpu_cores()
    return max(cpu_cores(), sum(int(getattr(dev, "core_count", 0) or 0) for dev in devices))


def device_work_limit() -> float:
    """The default :attr:`SolverSettings.work_limit`: ``WORK_PER_CORE`` x :func:`device_cores`, the
    same count on every machine of one kind, so the same seed there gives the same schedule."""
    return WORK_PER_CORE * device_cores()


# LPs of the SLP polish up to this many unknowns get all ``lp_polish_iters`` iterations: every Tammes
# polish at d = 3 up to K = 170 ((d - 1) K), the softmax codes at d = 3 up to K = 85 ((d - 1) 2K).
POLISH_FULL_UNKNOWNS = 340


@dataclasses.dataclass(frozen=True)
class SolverSettings(ValidatedSettings):
    """Immutable solver settings (plain Python values, validated on construction).

    Attributes:
      restarts: independent random starts per (d, K) pair (the population of basin hopping); 0
        (the default) sizes it by the pair (:meth:`restarts_for`). The global search has its own,
        ``SearchSettings.population``.
      steps: steps of the main continuation.
      t_start, t_end: temperatures of the main continuation (geometric schedule).
      learning_rate: Adam step per unit temperature (step size = learning_rate * t).
      hop_rounds: perturb-and-re-anneal rounds (0 disables basin hopping).
      hop_steps: steps of each re-anneal.
      hop_t_start: temperature each re-anneal starts from (it ends at t_end).
      hop_scale: perturbation size in units of the typical spacing K^{-1/(d-1)}.
      polish_steps: steps of the final continuation t_end -> polish_t_end.
      polish_t_end: final temperature of the polish.
      stall_tol: the annealing status is 'stalled' when the exact score changed by less than
        this over the last half of the polish.
      lp_polish_iters: iterations of the exact active-set (SLP) polish of each pair's best
        configuration (:mod:`gnc_jax._src.polish`), fewer for large LPs (:meth:`polish_iters_for`);
        0 skips it. Its convergence sets the final status.
      lp_polish_max_unknowns: pairs whose LP would have more tangent coordinates than this, (d - 1)
        times the columns of all variables, skip the polish (HiGHS took over 15 minutes for the
        softmax code d = 10, K = 100, 1800 unknowns); their status is the annealing's.
      dtype: 'float64' (default) or 'float32' (faster; results are still certified in float64).
      work_limit: the annealer's work per pair at most, in terms-steps (restarts x
        :attr:`schedule_steps` x d K^2, the same count on any machine): above it the restarts are
        halved, down to 1, then the hop rounds, down to 0, then the anneal and the polish are
        shortened in proportion (:meth:`sized_for`); 0: no limit; None (the default): sized to the
        device when a pair is sized (:func:`device_work_limit`: 2e11 on 2 CPU cores), so that
        building settings initialises no JAX backend (``jax.distributed.initialize`` comes after).
    """

    restarts: int = 0
    steps: int = 2000
    t_start: float = 0.1
    t_end: float = 1e-10
    learning_rate: float = 0.5
    hop_rounds: int = 6
    hop_steps: int = 1000
    hop_t_start: float = 0.01
    hop_scale: float = 0.6
    polish_steps: int = 1000
    polish_t_end: float = 1e-13
    stall_tol: float = 1e-12
    lp_polish_iters: int = 100
    lp_polish_max_unknowns: int = 1000
    dtype: str = "float64"
    work_limit: float | None = None

    def __post_init__(self):
        self._require_ints(("steps", "hop_steps", "polish_steps"), 1)
        self._require_ints(("restarts", "hop_rounds", "lp_polish_iters", "lp_polish_max_unknowns"), 0)
        w = self.work_limit
        bad = isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0
        if w is not None and bad:
            raise InvalidArgument(f"work_limit must be a finite number >= 0, got {w!r}")
        self._require_positive(
            ("t_start", "t_end", "learning_rate", "hop_t_start", "hop_scale", "polish_t_end")
        )
        if not self.t_end <= self.t_start:
            raise InvalidArgument(f"t_end must be <= t_start, got t_end={self.t_end}, t_start={self.t_start}")
        if not self.t_end <= self.hop_t_start:
            raise InvalidArgument(f"hop_t_start must be >= t_end, got {self.hop_t_start}")
        if not self.polish_t_end <= self.t_end:
            raise InvalidArgument(f"polish_t_end must be <= t_end, got {self.polish_t_end}")
        if not isinstance(self.stall_tol, (int, float)) or not self.stall_tol >= 0:
            raise InvalidArgument(f"stall_tol must be a number >= 0, got {self.stall_tol!r}")
        self._require_dtype()

    def with_device_limit(self) -> SolverSettings:
        """These settings with ``work_limit`` fixed: the device's (:func:`device_work_limit`) if
        None, so a record of them names the limit a pair ran under."""
        return self if self.work_limit is not None else self.replace(work_limit=device_work_limit())

    @property
    def schedule_steps(self) -> int:
        """Driver steps of one solve: the anneal, every hop round and the polish."""
        return self.steps + self.hop_rounds * self.hop_steps + self.polish_steps

    def polish_iters_for(self, unknowns: int) -> int:
        """SLP polish iterations for an LP in ``unknowns`` tangent coordinates: ``lp_polish_iters``
        up to ``POLISH_FULL_UNKNOWNS``, scaled by (``POLISH_FULL_UNKNOWNS`` / unknowns)^2 above, at
        least 20: one LP costs about the square of its unknowns, so a polish takes about the time
        of 100 LPs at ``POLISH_FULL_UNKNOWNS`` unknowns (docs/decisions.md)."""
        scale = min(1.0, (POLISH_FULL_UNKNOWNS / max(unknowns, 1)) ** 2)
        if scale == 1.0:
            return self.lp_polish_iters
        return max(min(20, self.lp_polish_iters), round(self.lp_polish_iters * scale))

    def restarts_for(self, d: int, K: int, n_devices: int = 1) -> int:
        """The restarts a pair gets, rounded up to a multiple of ``n_devices``: ``restarts`` if set,
        else 64 up to d K^2 = 7500 (d = 3, K = 50) and 64 * 7500 / (d K^2) above, rounded down to
        a power of two, at least 8: an annealing step costs ~ restarts d K^2 on a CPU, so every pair
        gets about the same time (docs/decisions.md). :meth:`sized_for` applies ``work_limit``."""
        R = self.restarts
        if not R:
            R = 64 if d * K * K <= 7500 else max(8, 2 ** int(math.log2(64 * 7500 / (d * K * K))))
        return -(-R // n_devices) * n_devices

    def sized_for(self, d: int, K: int, n_devices: int = 1) -> SolverSettings:
        """The settings a pair runs with, within ``work_limit`` (restarts x :attr:`schedule_steps`
        x d K^2): :meth:`restarts_for`, halved down to ``n_devices`` while over the limit, then the
        hop rounds halved down to 0, then the anneal's and polish's steps shortened in proportion,
        to ``MIN_SCHEDULE_STEPS`` together at least. A shortened anneal (and polish) covers the
        decades of temperature that the shortest schedule covers at ``STEPS_PER_DECADE`` steps a
        decade (from ``t_start``: 0.1 -> 6e-4 -> 5e-5 by default); steps beyond it make the
        schedule denser, up to the full schedule's steps a decade, and only then longer in
        temperature. Its ``t_end`` and ``polish_t_end`` rise as far as needed. Exploration goes
        first: one long restart beat many short ones where it was measured (docs/decisions.md,
        "The annealer's work limit")."""
        if self.work_limit is None:
            return self.with_device_limit().sized_for(d, K, n_devices)
        restarts, hops = self.restarts_for(d, K, n_devices), self.hop_rounds
        if not self.work_limit:
            return self.replace(restarts=restarts)
        terms = d * K * K
        work = lambda r, h: r * (self.steps + h * self.hop_steps + self.polish_steps) * terms
        while restarts > n_devices and work(restarts, hops) > self.work_limit:
            restarts = max(n_devices, -(-(restarts // 2) // n_devices) * n_devices)
        while hops and work(restarts, hops) > self.work_limit:
            hops //= 2
        f = min(1.0, self.work_limit / work(restarts, hops))
        if f == 1.0:
            return self.replace(restarts=restarts, hop_rounds=hops)
        least = min(1.0, MIN_SCHEDULE_STEPS / (self.steps + self.polish_steps))
        f = max(f, least)  # never longer than the user's schedule
        shorten = lambda n, g: max(1, round(n * g))
        steps, polish_steps = shorten(self.steps, f), shorten(self.polish_steps, f)

        def decades(n: int, full_n: int, full_decades: float) -> float:
            # the floor schedule's range, or the full schedule's steps a decade where n has more,
            # never fewer than STEPS_PER_DECADE a decade
            floor = shorten(full_n, least) / STEPS_PER_DECADE
            return min(n / STEPS_PER_DECADE, max(floor, n * full_decades / full_n))

        span = decades(steps, self.steps, math.log10(self.t_start / self.t_end))
        t_end = max(self.t_end, min(self.hop_t_start, self.t_start * 10**-span))
        span = decades(polish_steps, self.polish_steps, math.log10(self.t_end / self.polish_t_end))
        polish_t_end = max(self.polish_t_end, t_end * 10**-span)
        return self.replace(
            restarts=restarts,
            hop_rounds=hops,
            steps=steps,
            polish_steps=polish_steps,
            t_end=t_end,
            polish_t_end=polish_t_end,
        )


class State(NamedTuple):
    """What the driver carries: manifold variables, optimiser state, per-instance flags."""

    params: dict
    opt_state: optax.OptState
    done: jax.Array  # () bool: frozen (non-finite loss met)


def geometric(t0: float, t1: float, n: int) -> jax.Array:
    """n temperatures from t0 to t1, geometrically spaced."""
    return t0 * (t1 / t0) ** (jnp.arange(n) / max(n - 1, 1))


def tangent_projection() -> optax.GradientTransformation:
    """optax transformation: project every variable's gradient onto the tangent space of OB(d, K)
    at the current parameters (the Riemannian gradient)."""

    def update(updates, state, params):
        return jax.tree_util.tree_map(tangent_project, params, updates), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update)


def mask_columns(col_masks: dict) -> optax.GradientTransformation:
    """optax transformation: zero the update of padded columns (``col_masks[name]`` False)."""

    def update(updates, state, params=None):
        return {k: v * col_masks[k] for k, v in updates.items()}, state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update)


def scale_by_step_size() -> optax.GradientTransformationExtraArgs:
    """optax transformation: the descent step ``-step_size * u``, with ``step_size`` passed to
    ``update`` each step (the temperature-scaled step ``learning_rate * t`` of the continuations)."""

    def update(updates, state, params=None, *, step_size, **extra_args):
        return jax.tree_util.tree_map(lambda u: -step_size * u, updates), state

    return optax.GradientTransformationExtraArgs(lambda params: optax.EmptyState(), update)


def riemannian_adam(col_masks: dict, eps: float = 1e-30) -> optax.GradientTransformationExtraArgs:
    """Riemannian Adam on OB(d, K) per variable: tangent projection -> column mask -> Adam ->
    step; pair it with :func:`retract` as the projection of :func:`run_schedule`."""
    return optax.chain(
        tangent_projection(), mask_columns(col_masks), optax.scale_by_adam(eps=eps), scale_by_step_size()
    )


def euclidean_adam(col_masks: dict, eps: float = 1e-30) -> optax.GradientTransformationExtraArgs:
    """Adam in R^{d x K} per variable: column mask -> Adam -> step."""
    return optax.chain(mask_columns(col_masks), optax.scale_by_adam(eps=eps), scale_by_step_size())


def retract(params: dict) -> dict:
    """Back onto OB(d, K): every variable's columns normalised (the retraction)."""
    return jax.tree_util.tree_map(normalize_columns, params)


def run_schedule(
    value_and_grad: Callable,
    params: dict,
    optimizer: optax.GradientTransformationExtraArgs,
    project: Callable,
    temps,
    step_sizes,
    position=None,
) -> State:
    """The shared driver: an optax optimizer along a temperature schedule, then a projection.

    ``lax.scan`` over (``temps``, ``step_sizes``); ``value_and_grad(params, t)`` gives the loss and
    its Euclidean gradient. Each step takes the optimizer's update (given ``step_size=`` of that
    step; e.g. :func:`riemannian_adam`), applies it and maps the result back onto the constraint set
    with ``project`` (:func:`retract` for OB(d, K); ``optax.projections`` for others). An instance
    whose loss turns non-finite is frozen (``done``) and keeps its last finite parameters. With
    ``position`` (the steps of the whole solve done before this schedule), each step reports its
    position to the open progress meter (:func:`gnc_jax._src.progress.report_steps`).
    """
    state = State(params, optimizer.init(params), jnp.array(False))
    step_sizes = jnp.broadcast_to(jnp.asarray(step_sizes, temps.dtype), temps.shape)

    def step(state: State, xs):
        i, t, step_size = xs
        if position is not None:
            report_steps(position + i + 1)
        loss, g = value_and_grad(state.params, t)
        u, opt_state = optimizer.update(g, state.opt_state, state.params, step_size=step_size)
        new = project(optax.apply_updates(state.params, u))
        finite = jnp.isfinite(loss) & jnp.all(
            jnp.array([jnp.all(jnp.isfinite(v)) for v in jax.tree_util.tree_leaves(new)])
        )
        done = state.done | ~finite
        keep = lambda old, upd: jnp.where(done, old, upd)
        return State(
            jax.tree_util.tree_map(keep, state.params, new),
            jax.tree_util.tree_map(keep, state.opt_state, opt_state),
            done,
        ), None

    state, _ = jax.lax.scan(step, state, (jnp.arange(temps.shape[0]), temps, step_sizes))
    return state


def perturb(key, params: dict, row_mask, col_masks: dict, scale):
    """Gaussian tangent perturbation of every variable, then retraction (padding is untouched)."""
    keys = jax.random.split(key, len(params))
    out = {}
    for (name, X), k in zip(sorted(params.items()), keys):
        noise = jax.random.normal(k, X.shape, X.dtype) * row_mask[:, None] * col_masks[name][None, :]
        out[name] = normalize_columns(X + scale * tangent_project(X, noise))
    return out


def axis_map(fn, size: int, in_axes=0):
    """``jax.vmap(fn, in_axes)`` over a leading axis of ``size`` (restarts, instances); with size 1
    the axis is dropped and re-added instead, since XLA:CPU runs a matmul with a batch axis of one
    about 2x slower than the plain one (docs/decisions.md)."""
    if size > 1:
        return jax.vmap(fn, in_axes)

    def single(*args):
        axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        args = [a if ax is None else jax.tree_util.tree_map(lambda x: x[0], a) for a, ax in zip(args, axes)]
        return jax.tree_util.tree_map(lambda x: x[None], fn(*args))

    return single


class PairResult(NamedTuple):
    """Raw per-pair output of :func:`solve_pair` (arrays; certification happens afterwards)."""

    params: dict  # best member's variables, (d_max, K_max) each
    score: jax.Array  # its exact score (problem.score)
    scores: jax.Array  # (R,) final scores of the whole population
    status: jax.Array  # STALLED / MAX_STEPS / NONFINITE of the best member
    change: jax.Array  # |score change| of the best member over the second half of the polish phase


def solve_pair(
    problem: Problem,
    settings: SolverSettings,
    d_max: int,
    K_max: int,
    key,
    d,
    K,
    constrain=None,
    report: bool = False,
):
    """Solve one (d, K) pair (d, K may be traced) with all restarts; vmap this over pairs.

    ``constrain``, if given, is applied to the population (leading axis = restarts) to place it on
    a device mesh (see :mod:`gnc_jax._src.batch`). With ``report``, the steps done of
    :meth:`SolverSettings.schedule_steps` go to the open progress meter (:mod:`gnc_jax._src.progress`).
    """
    # Long because the anneal, the hops and the polish are one compiled program over one carried state.
    s = settings
    at = (lambda offset: offset) if report else (lambda offset: None)  # progress positions
    dtype = jnp.dtype(s.dtype)
    R = s.restarts
    k_init, k_hop = jax.random.split(key)
    params, row_mask, col_mask = axis_map(lambda k: problem.init(k, d, K, d_max, K_max, dtype), R)(
        jax.random.split(k_init, R)
    )
    row_mask, col_mask = row_mask[0], col_mask[0]
    if constrain is not None:
        params = constrain(params)
    block = term_block(R, K_max, K_max * max(problem.features_per_class, 1))
    if block:  # the terms in column blocks: nothing of size K x K is held
        score_all = axis_map(lambda p, c: problem.score_blocks(p, c, block), R, (0, None))
        value_and_grad = lambda p, t: problem.value_and_grad_blocks(p, col_mask, t, block)
    else:
        score_all = axis_map(problem.score, R, (0, None))
        offsets = problem.smoothing_offsets(col_mask)
        value_and_grad = lambda p, t: problem.value_and_grad(p, offsets, t)
    col_masks = problem.column_masks(col_mask)
    optimizer = riemannian_adam(col_masks)
    anneal = axis_map(
        lambda p, temps, offset: run_schedule(
            value_and_grad, p, optimizer, retract, temps, s.learning_rate * temps, offset
        ),
        R,
        (0, None, None),
    )

    state = anneal(params, geometric(s.t_start, s.t_end, s.steps).astype(dtype), at(0))
    params, score = state.params, jnp.where(state.done, -jnp.inf, score_all(state.params, col_mask))

    spacing = jnp.asarray(K, dtype) ** (-1.0 / (jnp.asarray(d, dtype) - 1.0))
    hop_temps = geometric(s.hop_t_start, s.t_end, s.hop_steps).astype(dtype)

    def hop(carry, xs):
        params, score = carry
        key, r = xs
        k_scale, k_noise = jax.random.split(key)
        scales = s.hop_scale * spacing * jax.random.uniform(k_scale, (R,), dtype, 0.25, 1.0)
        trial = axis_map(perturb, R, (0, 0, None, None, 0))(
            jax.random.split(k_noise, R), params, row_mask, col_masks, scales
        )
        st = anneal(trial, hop_temps, at(s.steps + r * s.hop_steps))
        trial_score = jnp.where(st.done, -jnp.inf, score_all(st.params, col_mask))
        better = trial_score > score
        params = jax.tree_util.tree_map(
            lambda a, b: jnp.where(better[:, None, None], b, a), params, st.params
        )
        score = jnp.maximum(score, trial_score)
        # Selection: the worse half restarts from copies of the better half.
        order = jnp.argsort(-score)
        rank = jnp.arange(R)
        src = jnp.where(rank < (R + 1) // 2, order, order[rank - (R + 1) // 2])
        return (jax.tree_util.tree_map(lambda a: a[src], params), score[src]), None

    if s.hop_rounds > 0:
        hops = (jax.random.split(k_hop, s.hop_rounds), jnp.arange(s.hop_rounds))
        (params, score), _ = jax.lax.scan(hop, (params, score), hops)

    # Polish: continue the schedule down to polish_t_end; record the score halfway for the status.
    half = s.polish_steps // 2
    temps = geometric(s.t_end, s.polish_t_end, s.polish_steps).astype(dtype)
    polish_at = s.steps + s.hop_rounds * s.hop_steps
    st1 = anneal(params, temps[:half], at(polish_at))
    mid = score_all(st1.params, col_mask)
    st2 = anneal(st1.params, temps[half:], at(polish_at + half))
    final = jnp.where(st1.done | st2.done, -jnp.inf, score_all(st2.params, col_mask))
    finite = jnp.isfinite(final)
    # Polish never makes a member worse: keep the pre-polish parameters where it did.
    improved = final >= score
    params = jax.tree_util.tree_map(lambda a, b: jnp.where(improved[:, None, None], b, a), params, st2.params)
    score = jnp.where(improved, final, score)
    best = jnp.argmax(score)
    change = jnp.abs(final[best] - mid[best])
    status = jnp.where(
        ~finite[best] & ~jnp.isfinite(score[best]),
        NONFINITE,
        jnp.where(change <= s.stall_tol, STALLED, MAX_STEPS),
    )
    return PairResult(jax.tree_util.tree_map(lambda a: a[best], params), score[best], score, status, change)
