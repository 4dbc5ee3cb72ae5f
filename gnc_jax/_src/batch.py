"""Many (d, K) pairs in one call: bucket, pad, mask, vmap, shard over devices, certify, scatter back.

Pairs are grouped into buckets of geometric sizes (2, 3, 4, 6, 8, 12, 16, 24, ...: at most 50% padding
per axis, 25% from 1024 on, where a step costs K^2; K starts at 8 so that small K share one bucket, while
d is kept tight because padded rows cost as much as real ones in every step). Each bucket is one jitted
call whose shapes depend only on the bucket (d_max, K_max), the number of pairs rounded up to a power of
two, and the settings, so a bucket compiles once however many pairs and which (d, K) inside it are
solved. The restart axis of every population is sharded over all visible devices with ``jax.sharding``
(restarts are rounded up to a multiple of the device count); on one CPU this is a no-op.

Every reported number is recomputed in float64 from the returned W by :mod:`gnc_jax._src.geometry`
(Wolfe's exact QP with its Frank-Wolfe certificate), vmapped over the bucket as well. Bucketing,
padding, keys, timing and scatter are the shared runner's (:func:`gnc_jax._src.runner.run_buckets`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from gnc_jax._src import geometry, metrics, runner
from gnc_jax._src.process import CompiledAhead, float64, one_at_a_time, release_compiled_programs
from gnc_jax._src.progress import step_meter
from gnc_jax._src.driver import STATUS_NAMES, SolverSettings, axis_map, solve_pair
from gnc_jax._src.errors import InvalidArgument
from gnc_jax._src.objectives import Problem, get_problem
from gnc_jax._src.polish import polish
from gnc_jax._src.search import SearchSettings, SearchStats, compile_ahead, search_stack
from gnc_jax._src.sphere import normalize_columns
from gnc_jax._src.status import OPTIMAL_GAP, SolutionCore, Status
from gnc_jax._src.store import CERTIFIED
from gnc_jax._src.theory import softmax_code_closed_form, tammes_closed_form


@dataclasses.dataclass(frozen=True)
class Solution(SolutionCore):
    """Best configuration found for one (d, K) pair, with certified float64 measures.

    Attributes:
      problem: 'tammes' or 'softmax-code'.
      d, K: the pair.
      W: (d, K) float64, unit columns.
      min_angle_deg, max_cos, rho_one_vs_one: exact Tammes measures of W (eq. 11).
      rho_one_vs_rest: exact softmax-code margin of W (eq. 3); strictly, a certified upper bound,
        exact when ``certificate_gap`` <= 1e-12 and ``rho_lower`` agrees.
      rho_lower: certified lower bound on it (equal to it within 1e-12 when exact); at large d
        and K (:func:`gnc_jax._src.geometry.separation`) only the classes nearest the margin get a QP
        and the two bracket the margin.
      distances: (K,) exact one-vs-rest distances (+inf for classes without a QP).
      rattlers: indices of rattlers of W for the solved problem (Definition 3.4 for softmax codes,
        points with a farther nearest neighbour for Tammes), at tolerance ``rattler_tol``.
      certificate_gap: largest Frank-Wolfe gap of the K QPs (<= 1e-12 certifies the distances).
      status: a :class:`gnc_jax._src.status.Status`: ``optimal`` only where the certified value attains
        a proven optimum (Theorem 3.3 / :func:`gnc_jax._src.theory.tammes_closed_form`; for HardMax
        both W's margin and the objective (5) at (W, H)) to 1e-12; otherwise the SLP polish's
        ``stationary``, ``stalled``, ``max_steps`` or ``failed`` (:func:`gnc_jax._src.polish.polish`);
        without the polish the annealer's ``stalled`` (score change <= ``stall_tol``) or
        ``max_steps``, or the global search's (:attr:`gnc_jax._src.search.SearchResult.status`);
        ``nonfinite``.
      residual: the number that decided the status: the gap to the proven optimum (optimal), the
        LP's predicted decrease per unit trust radius (polish), the annealer's last score change, or
        the search's relative gain over its last ``patience`` rounds.
      status_note: why an inner solver failed, or that a search was cut short by ``time_limit`` or
        Ctrl-C ('' otherwise).
      restarts: population size used.
      hits: how many members of the final population reached the best score to 1e-9.
      wall_s: the pair's wall time (compile included): its share of its bucket call, plus what ran
        for it alone before: its global search and the annealer that seeded it, and for a softmax
        code its Tammes solve.
      search: how the global search that ran for the pair ended (:class:`SearchStats`: why it
        stopped, rounds, restarts, work and budget; for a softmax code, its Tammes search's), or None
        where none ran.
      n, H, gnc1, gnc2, gnc3, loss: HardMax only (eq. 5): features per class, the features (d, n K)
        float64, class-major, their collapse metrics (:mod:`gnc_jax._src.metrics`; GNC2 is the certified
        margin rho_one_vs_rest of W) and the HardMax loss of eq. (5) at (W, H); None otherwise.
    """

    problem: str
    d: int
    K: int
    W: np.ndarray
    min_angle_deg: float
    max_cos: float
    rho_one_vs_one: float
    rho_one_vs_rest: float
    rho_lower: float
    distances: np.ndarray
    rattlers: np.ndarray
    certificate_gap: float
    hits: int
    search: SearchStats | None = None
    n: int | None = None
    H: np.ndarray | None = None
    gnc1: float | None = None
    gnc2: float | None = None
    gnc3: float | None = None
    loss: float | None = None

    @property
    def n_rattlers(self) -> int:
        return len(self.rattlers)

    def summary(self) -> dict:
        """JSON-ready dict of the scalar fields."""
        return (
            {
                "problem": self.problem,
                "d": self.d,
                "K": self.K,
                "min_angle_deg": self.min_angle_deg,
                "max_cos": self.max_cos,
                "rho_one_vs_one": self.rho_one_vs_one,
                "rho_one_vs_rest": self.rho_one_vs_rest,
                "rho_lower": self.rho_lower,
                "n_rattlers": self.n_rattlers,
                "certificate_gap": self.certificate_gap,
                "hits": self.hits,
            }
            | self.core_summary()
            | {
                k: getattr(self, k)
                for k in ("n", "gnc1", "gnc2", "gnc3", "loss")
                if getattr(self, k) is not None
            }
            | (self.search.summary() if self.search else {})
        )


@functools.cache
def _bucket_solver(
    problem: Problem, settings: SolverSettings, d_max: int, K_max: int, n_dev: int, report: bool = False
):
    constrain = runner.restart_constraint(n_dev)

    def run(keys, ds, Ks):
        pair = functools.partial(
            solve_pair, problem, settings, d_max, K_max, constrain=constrain, report=report
        )
        res = axis_map(pair, keys.shape[0])(keys, ds, Ks)
        params = {k: v.astype(jnp.float64) for k, v in res.params.items()}
        if settings.dtype != "float64":  # back onto the sphere in float64 before anything is certified
            params = {k: jax.vmap(normalize_columns)(v) for k, v in params.items()}  # per pair
        return res, params

    return jax.jit(run)


@jax.jit
def _certify_program(W, col_mask):
    return jax.vmap(geometry.separation_masked)(W, col_mask)


_certify_vmapped = CompiledAhead(_certify_program, one_at_a_time(_certify_program))


def _certify_ahead(d: int, K: int) -> None:
    """Start compiling the certification of one (d, K) configuration, a bucket of its own as a
    searched pair's (:func:`_certify`; nothing to compile where it is screened pair by pair)."""
    if K <= geometry.SCREEN_MIN_K:
        d_pad, K_pad = _certify_shape(d, K)
        _certify_vmapped.start(
            jax.ShapeDtypeStruct((1, d_pad, K_pad), jnp.float64), jax.ShapeDtypeStruct((1, K_pad), bool)
        )


def _certify_shape(d: int, K: int) -> tuple[int, int]:
    """The padded (d, K) a configuration is certified at below ``geometry.SCREEN_MIN_K`` columns:
    d to its size bucket, K to a multiple of 8, so that pairs of nearby sizes share one compiled
    program (most of a small pair's certification is compiling it) at little extra work."""
    return runner.bucket_size(d), -(-K // 8) * 8


def _certify(params, dims, K_max):
    """Certified separation of a bucket of padded configurations (exact QPs), as numpy arrays.

    A program of its own, outside the sharded solve: it works per pair, not per restart, and its
    data-dependent while_loop has no business being partitioned across devices. ``dims`` are the
    real pairs (the first slots of the bucket). Buckets above
    ``geometry.SCREEN_MIN_K`` columns are certified pair by pair with screened QPs (features, where
    the problem has one per class, rank the first candidates) and padded back to the bucket; their
    ``weights`` are then a list of each pair's sparse (K, K) weights.
    """
    W = params["W"]
    if K_max <= geometry.SCREEN_MIN_K:
        B, d, K = W.shape
        d_pad, K_pad = _certify_shape(d, K)
        padded = np.zeros((B, d_pad, K_pad))
        padded[:, :d, :K], padded[:, 0, K:] = W, 1.0  # zero rows, e_1 columns (masked)
        Ks = [kk for _, kk in dims] + [dims[0][1]] * (B - len(dims))  # padding slots
        col_mask = np.arange(K_pad)[None, :] < np.array(Ks)[:, None]
        sep = jax.device_get(_certify_vmapped(jnp.asarray(padded), jnp.asarray(col_mask)))
        per_class = ("nearest_chords", "distances", "lower_bounds")
        return sep._replace(weights=sep.weights[:, :K, :K], **{f: getattr(sep, f)[:, :K] for f in per_class})
    seps, weights = [], []
    for slot, (dd, kk) in enumerate(dims):
        H = params.get("H")
        dirs = H[slot, :dd, :kk] if H is not None and H.shape[-1] == W.shape[-1] else None
        sep = _screened_separation(np.ascontiguousarray(W[slot, :dd, :kk]), dirs)
        pad = K_max - kk
        seps.append(
            sep._replace(
                nearest_chords=np.pad(sep.nearest_chords, (0, pad), constant_values=np.inf),
                distances=np.pad(sep.distances, (0, pad), constant_values=np.inf),
                lower_bounds=np.pad(sep.lower_bounds, (0, pad), constant_values=np.inf),
                weights=None,
            )
        )
        weights.append(sep.weights)
    return jax.tree_util.tree_map(lambda *a: np.stack(a), *seps)._replace(weights=weights)


_LAST_SEPARATION: list = []  # [(digest of W, its separation)]: the last one certified pair by pair


def _digest(W: np.ndarray) -> tuple:
    """W's shape, dtype and SHA-256: equal digests, equal arrays."""
    return W.shape, W.dtype.str, hashlib.sha256(np.ascontiguousarray(W).tobytes()).digest()


def _screened_separation(W: np.ndarray, directions):
    """``geometry.separation`` of one pair (no features: the last result kept). A softmax code
    started from its Tammes code (:func:`_from_tammes`) certifies the configuration the Tammes
    solve has just certified; at large K it is most of a minute (docs/results.md), not run twice."""
    if directions is not None:
        return jax.device_get(geometry.separation(W, directions=directions))
    digest = _digest(W)
    if _LAST_SEPARATION and _LAST_SEPARATION[0][0] == digest:
        return _LAST_SEPARATION[0][1]
    sep = jax.device_get(geometry.separation(W))
    _LAST_SEPARATION[:] = [(digest, sep)]
    return sep


def _polish_bucket(problem, params, sep, dims, settings):
    """Exact SLP polish of each pair's best configuration (host, float64); ``params`` (padded arrays)
    are updated in place. HardMax features are polished from where the solver left them. Returns
    per pair its :class:`gnc_jax._src.polish.PolishResult`, or None where it was skipped (too many
    unknowns)."""
    results = []
    n = problem.features_per_class
    for slot, (dd, kk) in enumerate(dims):
        unknowns = (dd - 1) * kk * (1 + n)
        if unknowns > settings.lp_polish_max_unknowns:
            results.append(None)
            continue
        Wi = np.array(params["W"][slot, :dd, :kk])
        pair = {"W": Wi}
        if problem.features_start == "solver":
            pair["H"] = np.array(params["H"][slot, :dd, : n * kk])
        elif problem.features_start == "weights":
            # Start from the exact features of eq. (9): the joint score then equals rho_one-vs-rest(W),
            # and the polish can only raise it. A point inside the hull of the rest has none: any
            # unit vector will do there, take w_k.
            H = geometry.features_from_weights(Wi, sep.weights[slot][:kk, :kk])
            pair["H"] = np.where(np.isnan(H), Wi, H)
        res = polish(problem, pair, max_iter=settings.polish_iters_for(unknowns))
        params["W"][slot, :dd, :kk] = res.params["W"]
        if problem.features_start == "solver":
            params["H"][slot, :dd, : n * kk] = res.params["H"]
        results.append(res)
    return results


def gap_to_proven_optimum(
    prob: Problem, d: int, K: int, max_cos: float, rho_lower: float, loss: float | None = None
) -> float | None:
    """How far a certified value is from the proven optimum of the pair (None where none is known):
    Theorem 3.3's rho for softmax codes (compared with the certified lower bound ``rho_lower``), the
    closed-form max-cosine for Tammes; for HardMax the larger of W's gap and that of the objective (5)
    at (W, H), ``loss``, whose optimum is -rho (Theorem 3.2)."""
    if prob.score_field == "min_angle_deg":
        best = tammes_closed_form(d, K)
        return None if best is None else float(max_cos) - best
    closed = softmax_code_closed_form(d, K)
    if closed is None:
        return None
    gap = closed[0] - float(rho_lower)
    return gap if loss is None else max(gap, loss + closed[0])


def proven_status(
    prob: Problem, d: int, K: int, status: Status, residual: float, max_cos, rho_lower, loss=None
) -> tuple[Status, float]:
    """``(status, residual)`` of a certified code, made ``optimal`` (residual: the gap) where its
    certified value is within :data:`~gnc_jax._src.status.OPTIMAL_GAP` of the pair's proven optimum
    (:func:`gap_to_proven_optimum`); unchanged otherwise, and for a non-finite run."""
    gap = gap_to_proven_optimum(prob, d, K, max_cos, rho_lower, loss)
    if gap is not None and gap <= OPTIMAL_GAP and status != Status.NONFINITE:
        return Status.OPTIMAL, max(gap, 0.0)
    return status, residual


def certified_rattlers(prob: Problem, sep, slot: int, K: int, tol: float) -> np.ndarray:
    """The rattlers of the configuration in ``slot`` of a certification, for the problem solved:
    points with a farther nearest neighbour (Tammes) or classes farther from the hull of the rest
    (softmax codes, Definition 3.4), by more than ``tol``; where the certification only bounds the
    distances (large K), the classes certainly farther."""
    if prob.score_field == "min_angle_deg":
        return geometry.above_minimum(sep.nearest_chords[slot, :K], tol)
    dist = np.asarray(sep.distances[slot, :K])
    if np.all(np.isfinite(dist)):
        return geometry.above_minimum(dist, tol)
    return np.flatnonzero(np.asarray(sep.lower_bounds[slot, :K]) > float(sep.rho_one_vs_rest[slot]) + tol)


def _problem_score(prob: Problem, sep, slot):
    """What the problem maximises, from a certification: the min angle (Tammes) or rho_one-vs-rest."""
    value = getattr(sep, prob.score_field)
    return float(value if slot is None else value[slot])


def _initial_configs(initial, pairs) -> dict[int, list[np.ndarray]]:
    """``initial`` ({(d, K): W or [W, ...]}) as {pair index: [validated (d, K) float64 arrays]}."""
    if initial is None:
        return {}
    if not isinstance(initial, dict):
        raise InvalidArgument(
            f"initial must be a dict {{(d, K): configuration(s)}}, got {type(initial).__name__}"
        )
    out = {}
    for pair, configs in initial.items():
        if pair not in pairs:
            raise InvalidArgument(f"initial names the pair {pair!r}, which is not among the pairs solved")
        configs = [configs] if np.ndim(configs) == 2 else list(configs)
        checked = [geometry.validate_configuration(A, "initial") for A in configs]
        for A in checked:
            if A.shape != tuple(pair):
                raise InvalidArgument(f"initial[{pair!r}] must have shape {tuple(pair)}, got {A.shape}")
        for i, p in enumerate(pairs):
            if p == tuple(pair):
                out[i] = checked
    return out


@float64
def solve(
    problem: str,
    d: int | Sequence[int],
    K: int | Sequence[int],
    *,
    key: jax.Array | None = None,
    seed: int | None = None,
    solver: SolverSettings | None = None,
    search: SearchSettings | None = None,
    n: int = 1,
    time_limit: float | None = None,
    initial: dict | None = None,
    progress=None,
    release_memory: bool = False,
    rattler_tol: float = 1e-6,
) -> Solution | list[Solution]:
    """Solve ``problem`` for every pair of the cross product d x K in batched, compiled calls.

    Args:
      problem: 'tammes' (eq. 11), 'softmax-code' (eq. 3) or 'hardmax' (eq. 5; give ``n``).
      d: an integer or a sequence of integers (>= 2 each).
      K: the same.
      key, seed, solver, search, n, time_limit, initial, progress, release_memory, rattler_tol: as
        for :func:`solve_pairs`.

    Returns:
      A `Solution` if d and K are both integers, else a list in the order of the cross product
      (d outer, K inner).
    """
    ds = runner.positive_ints("d", d)
    Ks = runner.positive_ints("K", K)
    sols = solve_pairs(
        problem,
        [(dd, kk) for dd in ds for kk in Ks],
        key=key,
        seed=seed,
        solver=solver,
        search=search,
        n=n,
        time_limit=time_limit,
        initial=initial,
        progress=progress,
        release_memory=release_memory,
        rattler_tol=rattler_tol,
    )
    scalar = isinstance(d, (int, np.integer)) and isinstance(K, (int, np.integer))
    return sols[0] if scalar else sols


class _Request(NamedTuple):
    """A validated :func:`solve_pairs` call: what its stages read."""

    prob: Problem
    pairs: list  # (d, K) tuples
    key: jax.Array
    solver: SolverSettings
    search: SearchSettings
    time_limit: float | None
    initial: dict  # pair index -> [configurations]
    progress: object
    release_memory: bool
    rattler_tol: float

    def pair_key(self, i: int) -> jax.Array:
        """One key per pair, derived from the pair itself: results do not depend on the batch."""
        return runner.instance_key(self.key, *self.pairs[i])

    def fingerprint(self) -> tuple | None:
        """What, with the problem, fixes the result bit for bit on one machine (None with a time
        limit or ``initial``)."""
        if self.time_limit is not None or self.initial:
            return None
        return tuple(self.pairs), _key_bytes(self.key), self.solver, self.search, self.rattler_tol

    def searched(self, K: int) -> bool:
        """Whether the global search runs for a pair with K points."""
        role = self.prob.search_role
        return self.search.applies(K) and (
            role == "solution" or (role == "candidate" and self.search.cross_seed)
        )


class _Solved(NamedTuple):
    """A bucket's configurations on the host (padded arrays) and what its solver reported per pair."""

    params: dict
    statuses: list
    residual: np.ndarray
    notes: list
    hits: list
    restarts: int
    K_max: int


@float64
def solve_pairs(
    problem: str,
    pairs: Sequence[tuple[int, int]],
    *,
    key: jax.Array | None = None,
    seed: int | None = None,
    solver: SolverSettings | None = None,
    search: SearchSettings | None = None,
    n: int = 1,
    time_limit: float | None = None,
    initial: dict | None = None,
    progress=None,
    release_memory: bool = False,
    rattler_tol: float = 1e-6,
) -> list[Solution]:
    """Solve ``problem`` for a list of (d, K) pairs, one compiled call per size bucket.

    The stages: the candidates of each pair (``initial``, cross-seeded codes), the global search of
    the pairs it covers, the compiled solve of the other pairs by size bucket, then per bucket the
    best candidate, the exact polish and the certification.

    Args:
      problem: 'tammes' (eq. 11), 'softmax-code' (eq. 3) or 'hardmax' (eq. 5, with ``n`` features
        per class; the solution carries H and its GNC1/GNC3).
      pairs: (d, K) pairs, d >= 2 and K >= 2.
      key: a ``jax.random`` key; or ``seed`` (an int). Exactly one is required. The same call gives
        the same answer bit for bit on a CPU (on a GPU, XLA's reductions may round differently from
        run to run). A pair's result depends only on the key, the pair and the settings, not on what
        else is in the batch, up to floating-point rounding (a batch of another size sums in another
        order): its certified values agree to ~1e-9.
      solver: :class:`SolverSettings` of the annealer and the polish (defaults if None), e.g.
        ``SolverSettings(restarts=256)``.
      search: :class:`SearchSettings` of the global search (defaults if None), e.g.
        ``SearchSettings(rounds=0)`` turns it off.
        Tammes pairs with K >= ``search.min_K`` are solved by the iterated hole search
        (:mod:`gnc_jax._src.search`) instead of the annealer; with ``search.cross_seed`` the
        softmax-code annealer's code seeds each Tammes search, and softmax-code pairs are also
        solved as Tammes pairs (the same key, settings, time limit and ``initial``): with such K
        they start their polish from the Tammes code when its one-vs-rest margin is larger, with
        other K the Tammes code is their start in place of the softmax-code annealer's. The
        softmax code reported is never below the margin of the code :func:`solve_tammes` returns
        for the same arguments; right after such a call (no ``time_limit`` or ``initial``) its
        codes are taken, not solved again.
      time_limit: seconds per searched pair (from when its search starts; pairs searched together,
        ``search_stack``, share the clock): its search stops after the round that spends them and
        returns the best configuration so far (anytime). Ctrl-C does the same.
      n: features per class (HardMax only).
      initial: {(d, K): configuration or list of configurations} that join the search's population
        (e.g. the softmax codes of a store, to seed the Tammes search).
      progress: a text stream (e.g. ``sys.stderr``) for the search's per-round lines, a line after
        each bucket (pairs done, elapsed, ETA) and, while a bucket's compiled solve runs longer than
        10 s, a line every 10 s (steps done, ETA); or None.
      release_memory: drop JAX's compilation caches after each search (a pair or a stack) when the
        process's memory maps near the kernel's limit
        (:func:`gnc_jax._src.process.release_compiled_programs`; this also drops the caller's
        compiled programs, so it is off unless asked; ``gnc-jax`` asks).
      rattler_tol: tolerance of the rattler test.

    Returns:
      One `Solution` per pair, in order.
    """
    # Long because its Args document every keyword; the body is the stages in order.
    req = _request(
        problem,
        pairs,
        n=n,
        key=key,
        seed=seed,
        solver=solver,
        search=search,
        time_limit=time_limit,
        initial=initial,
        progress=progress,
        release_memory=release_memory,
        rattler_tol=rattler_tol,
    )
    for (dd, _), members in list(_search_stacks(req).items())[:1]:  # compiles while candidates run
        compile_ahead(dd, [req.pairs[i][1] for i in members], [req.pair_key(i) for i in members], req.search)
        for kk in sorted({req.pairs[i][1] for i in members}):
            _certify_ahead(dd, kk)
    candidates, seeding_s = _candidates(req)
    searched = _search(req, candidates)
    tammes = _tammes_codes(req)
    solved = set(searched)
    started = {i for i in tammes if not req.searched(req.pairs[i][1])}  # the Tammes anneal's codes
    beside = {i: [tammes[i].W] for i in tammes.keys() - started}  # the Tammes codes that compete

    def bucket_of(i):
        if i in solved or i in started:
            return (0, i)
        dd, kk = req.pairs[i]
        solver = _seed_annealer(req.solver) if req.searched(kk) else req.solver
        sized = solver.sized_for(dd, kk, runner.device_count())
        return 1, runner.bucket_size(dd), runner.bucket_size(kk, minimum=8), dataclasses.astuple(sized)

    def solve(bucket, members, padded):
        """The bucket's configurations (solved, the best candidate, polished) and their certification."""
        dims = [req.pairs[i] for i in members]
        if members[0] in solved:
            out = _from_search(req, searched[members[0]], dims[0])
        elif members[0] in started:
            out = _from_tammes(tammes[members[0]])
        else:
            out = _compiled_solve(req, bucket, members, padded)
            for slot, i in enumerate(members):  # the Tammes solve of a candidate, cut short
                note = tammes[i].status_note if i in tammes else ""
                out.notes[slot] = f"Tammes code: {note}" if note else ""
        sep = _certify(out.params, dims, out.K_max)
        # The caller's configurations and the Tammes code, where better, replace the solver's before
        # the polish, which can only improve them (a solved pair's candidates were its search's seeds).
        others = [[] if i in solved else [*candidates.get(i, ()), *beside.get(i, ())] for i in members]
        if _adopt_better(req.prob, out.params, sep, dims, others):
            sep = _certify(out.params, dims, out.K_max)
        if req.solver.lp_polish_iters:
            sep = _polish(req, out, sep, dims)
        return out, sep

    def finish(bucket, members, raw, wall):
        out, sep = raw
        return [
            _solution(
                req,
                i,
                out,
                sep,
                slot,
                wall + _seconds_before(i, seeding_s, searched, tammes),
                searched[i].stats if i in searched else tammes[i].search if i in tammes else None,
            )
            for slot, i in enumerate(members)
        ]

    sols = runner.run_buckets(len(req.pairs), bucket_of, solve, finish, req.progress, f"solve {problem}")
    if req.prob.name == "tammes":
        _keep_tammes(req, sols, interrupted=any(r.interrupted for r in searched.values()))
    return sols


def _request(
    problem,
    pairs,
    *,
    n,
    key,
    seed,
    solver,
    search,
    time_limit,
    initial,
    progress,
    release_memory,
    rattler_tol,
) -> _Request:
    """The arguments of :func:`solve_pairs`, validated (errors name the argument), with defaults
    applied."""
    prob = get_problem(problem, n)
    pairs = list(pairs)
    if not pairs:
        raise InvalidArgument("pairs is empty")
    for pair in pairs:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise InvalidArgument(f"pairs must hold (d, K) tuples, got {pair!r}")
        runner.positive_ints("d", pair[0])
        runner.positive_ints("K", pair[1])
    pairs = [(int(dd), int(kk)) for dd, kk in pairs]
    key = runner.resolve_key(key, seed)
    time_limit = runner.time_limit_seconds(time_limit)
    release_memory = runner.flag("release_memory", release_memory)
    solver = SolverSettings.given("solver", solver)
    search = SearchSettings.given("search", search)
    initial = _initial_configs(initial, pairs)
    return _Request(
        prob, pairs, key, solver, search, time_limit, initial, progress, release_memory, rattler_tol
    )


def _candidates(req: _Request) -> tuple[dict[int, list[np.ndarray]], dict[int, float]]:
    """Per pair, the configurations that join its search or compete with its solver's: the caller's
    ``initial`` and, for a pair the search solves with ``cross_seed``, the softmax-code annealer's
    code of the pair; and per such pair the wall time of that annealer's solve, which the pair's
    ``wall_s`` includes."""
    candidates, seconds = {i: list(v) for i, v in req.initial.items()}, {}
    if req.prob.search_role == "solution" and req.search.cross_seed:
        seeded = [i for i, (_, kk) in enumerate(req.pairs) if req.searched(kk)]
        if seeded:
            codes = solve_pairs(
                "softmax-code",
                [req.pairs[i] for i in seeded],
                key=req.key,
                solver=_seed_annealer(req.solver),
                search=req.search.replace(rounds=0, cross_seed=False),  # the softmax-code annealer's
            )
            for i, code in zip(seeded, codes):
                candidates[i] = [*candidates.get(i, ()), code.W]
                seconds[i] = code.wall_s
    return candidates, seconds


def _seed_annealer(solver: SolverSettings) -> SolverSettings:
    """The softmax-code annealer of a pair the search covers: 8 restarts (or the caller's) without
    the polish. Its code seeds the Tammes search (:func:`_candidates`) and competes with the Tammes
    code as the softmax code's start (:func:`solve_pairs`), where the polish follows: the same
    compiled program both times, so a softmax-code solve anneals once more but compiles once."""
    return solver.replace(lp_polish_iters=0, restarts=solver.restarts or 8)


def _tammes_codes(req: _Request) -> dict[int, Solution]:
    """For each softmax-code pair (with ``cross_seed``), the Tammes code that :func:`solve_tammes`
    returns with the same key, settings, time limit and initial configurations, so that the softmax
    code reported is never below that code's one-vs-rest margin (the polish can only raise it).
    Where the search covers the pair, the code is a candidate beside the softmax-code annealer's;
    elsewhere it is the pair's start: rho_one-vs-rest(W) >= 1 - max cos(W) (eq. 3 with h_k = w_k),
    so the Tammes anneal is the softmax-code anneal with H tied to W: one product a step where the
    untied anneal forms three (docs/results.md, "The softmax code from the Tammes anneal").
    {pair index: Tammes solution}."""
    if req.prob.search_role != "candidate" or not req.search.cross_seed:
        return {}
    kept = list(_LAST_TAMMES)
    codes = _kept_tammes(req) or solve_pairs(
        "tammes",
        req.pairs,
        key=req.key,
        solver=req.solver,
        search=req.search,
        time_limit=req.time_limit,
        initial={req.pairs[i]: configs for i, configs in req.initial.items()} or None,
        progress=req.progress,
        release_memory=req.release_memory,
        rattler_tol=req.rattler_tol,
    )
    _LAST_TAMMES[:] = kept  # only the caller's own Tammes solves are kept
    return dict(enumerate(codes))


_LAST_TAMMES: list = []  # [(fingerprint, solutions, digests of their W)]: the last Tammes solve


def _keep_tammes(req: _Request, sols: list, interrupted: bool) -> None:
    """Keep the caller's last Tammes solve whose result a rerun would repeat (no time limit,
    ``initial`` or Ctrl-C, which ends a search early: ``interrupted``), so that a softmax-code solve
    with the same arguments (:func:`_tammes_codes`) takes its codes instead of solving them again
    (``make demo`` solves both problems)."""
    fingerprint = req.fingerprint()
    kept = fingerprint is not None and not interrupted
    _LAST_TAMMES[:] = [(fingerprint, sols, [_digest(s.W) for s in sols])] if kept else []


def _kept_tammes(req: _Request) -> list | None:
    """The kept Tammes solve of the same pairs and arguments (its W unchanged since), with
    ``wall_s`` 0: this call did not spend it. None if there is none."""
    fingerprint = req.fingerprint()
    if fingerprint is None or not _LAST_TAMMES or _LAST_TAMMES[0][0] != fingerprint:
        return None
    _, sols, digests = _LAST_TAMMES[0]
    if [_digest(s.W) for s in sols] != digests:
        return None
    return [dataclasses.replace(s, wall_s=0.0) for s in sols]


def _seconds_before(i: int, seeding_s: dict, searched: dict, tammes: dict) -> float:
    """The wall time pair ``i`` spent before its bucket: the annealer's that seeded its search
    (:func:`_candidates`), and its search's or its Tammes solve's."""
    own = searched[i].elapsed_s if i in searched else tammes[i].wall_s if i in tammes else 0.0
    return seeding_s.get(i, 0.0) + own


def _search_stacks(req: _Request) -> dict:
    """The pairs the global search solves, by (d, padded size): {(d, size): [pair index]}."""
    stacks = {}
    for i, (dd, kk) in enumerate(req.pairs):
        if req.prob.search_role == "solution" and req.searched(kk):
            stacks.setdefault((dd, req.search.padded(kk)), []).append(i)
    return stacks


def _search(req: _Request, candidates: dict) -> dict:
    """The global search of every pair it covers (:meth:`_Request.searched`), pairs of one d and
    padded size stacked together (:func:`gnc_jax._src.search.search_stack`); {pair index: result}."""
    searched = {}
    for (dd, _), members in _search_stacks(req).items():
        found = search_stack(
            dd,
            [req.pairs[i][1] for i in members],
            [req.pair_key(i) for i in members],
            req.search,
            [candidates.get(i, ()) for i in members],
            req.time_limit,
            req.progress,
        )
        searched.update(zip(members, found))
        if req.release_memory:  # each stack compiles programs of its own
            release_compiled_programs()
    return searched


def _from_search(req: _Request, found, pair) -> _Solved:
    """A pair the search solved, as a bucket of one."""
    return _Solved(
        params={"W": found.W[None].copy()},
        statuses=[found.status],
        residual=np.array([found.recent_gain]),
        notes=[found.note],
        hits=[found.hits],
        restarts=req.search.population_for(*pair),
        K_max=pair[1],
    )


def _from_tammes(sol: Solution) -> _Solved:
    """A softmax-code pair started from its Tammes code (:func:`_tammes_codes`), as a bucket of one.
    Its status is the Tammes solve's, except ``optimal``: that proves the Tammes optimum, not the
    margin's (:func:`proven_status` decides the margin's)."""
    status = Status.STALLED if sol.status == Status.OPTIMAL else sol.status
    return _Solved(
        params={"W": sol.W[None].copy()},
        statuses=[status],
        residual=np.array([sol.residual]),
        notes=[f"Tammes code: {sol.status_note}" if sol.status_note else ""],
        hits=[sol.hits],
        restarts=sol.restarts,
        K_max=sol.K,
    )


def _compiled_solve(req: _Request, bucket, members, padded) -> _Solved:
    """The bucket's pairs solved by one compiled call of the annealer (:func:`_bucket_solver`); the
    same call again returns a copy of the last result (:data:`_LAST_ANNEAL`)."""
    _, d_max, K_max, sized = bucket
    sized = SolverSettings(*sized)
    dsb, Ksb = (np.array([req.pairs[i][j] for i in padded]) for j in (0, 1))
    keys = jnp.stack([req.pair_key(i) for i in padded])
    n_dev = runner.device_count()
    call = req.prob, sized, d_max, K_max, n_dev, dsb.tobytes(), Ksb.tobytes(), _key_bytes(keys)
    if _LAST_ANNEAL and _LAST_ANNEAL[0][0] == call:
        return _copy_solved(_LAST_ANNEAL[0][1])
    report = req.progress is not None
    fn = _bucket_solver(req.prob, sized, d_max, K_max, n_dev, report)
    label = f"solve {req.prob.name} (d <= {d_max}, K <= {K_max}, {len(members)} pair(s))"
    with step_meter(req.progress, label, sized.schedule_steps):
        res, params = jax.device_get(fn(keys, jnp.asarray(dsb), jnp.asarray(Ksb)))
    out = _Solved(
        params={k: np.array(v) for k, v in params.items()},
        statuses=[STATUS_NAMES[int(v)] for v in np.array(res.status)],
        residual=np.array(res.change, np.float64),
        notes=[""] * len(padded),
        hits=[int(np.sum(sc >= sc.max() - 1e-9)) for sc in np.asarray(res.scores)],
        restarts=sized.restarts,
        K_max=K_max,
    )
    small = sum(v.nbytes for v in out.params.values()) <= ANNEAL_KEEP_BYTES
    _LAST_ANNEAL[:] = [(call, _copy_solved(out))] if small else []
    return out


# The last compiled solve, kept (up to this size) because a softmax-code solve of a pair the search
# covers runs the annealer whose code seeded its Tammes search again, with the same program, keys and
# sizes (:func:`_seed_annealer`): a copy of the result is the same bits, without the anneal.
ANNEAL_KEEP_BYTES = 64 << 20
_LAST_ANNEAL: list = []  # [(the call's arguments, its _Solved)]


def _key_bytes(keys: jax.Array) -> tuple:
    return str(keys.dtype), np.asarray(jax.random.key_data(keys)).tobytes()


def _copy_solved(out: _Solved) -> _Solved:
    """A copy whose arrays and lists the caller may change in place (the polish does)."""
    return out._replace(
        params={k: v.copy() for k, v in out.params.items()},
        statuses=list(out.statuses),
        residual=out.residual.copy(),
        notes=list(out.notes),
        hits=list(out.hits),
    )


def _adopt_better(prob: Problem, params, sep, dims, alternatives) -> bool:
    """Per slot, the best of the given configurations by the problem's certified score replaces the
    solver's where it is better (``params`` updated in place); whether any did."""
    swapped = False
    for slot, ((dd, kk), configs) in enumerate(zip(dims, alternatives)):
        best = _problem_score(prob, sep, slot)
        for A in configs:
            score = _problem_score(prob, geometry.separation(A), None)
            if score > best:
                best = score
                params["W"][slot, :dd, :kk] = A
                swapped = True
    return swapped


def _polish(req: _Request, out: _Solved, sep, dims):
    """The exact SLP polish of the bucket (:func:`_polish_bucket`); its status, residual and note
    replace the solver's where it ran. Returns the new certification."""
    for slot, res in enumerate(_polish_bucket(req.prob, out.params, sep, dims, req.solver)):
        if res is not None and out.statuses[slot] != Status.NONFINITE:
            out.statuses[slot], out.residual[slot] = res.status, res.residual
            out.notes[slot] = "; ".join(filter(None, (out.notes[slot], res.note)))
    return _certify(out.params, dims, out.K_max)


def _solution(req: _Request, i: int, out: _Solved, sep, slot: int, wall: float, search) -> Solution:
    """The :class:`Solution` of pair ``i`` in ``slot`` of a solved, certified bucket (``search``:
    its :class:`SearchStats` or None)."""
    prob = req.prob
    n = prob.features_per_class
    dd, kk = req.pairs[i]
    status, residual = out.statuses[slot], float(out.residual[slot])
    dist = np.asarray(sep.distances[slot, :kk])
    Wi = np.array(out.params["W"][slot, :dd, :kk])
    rho = float(sep.rho_one_vs_rest[slot])
    extra = {}
    if prob.features_start == "solver":
        Hi = np.array(out.params["H"][slot, :dd, : n * kk])
        labels = metrics.class_major_labels(kk, n)
        terms = np.asarray(prob.terms({"W": Wi, "H": Hi}))
        loss = float(np.max(terms[np.asarray(prob.term_mask(np.ones(kk, bool)))]))  # eq. (5)
        extra = dict(
            n=n,
            H=Hi,
            gnc1=metrics.gnc1(Hi, labels),
            gnc2=rho,
            gnc3=metrics.gnc3(Wi, Hi, labels),
            loss=loss,
        )
    status, residual = proven_status(
        prob, dd, kk, status, residual, sep.max_cos[slot], sep.rho_lower[slot], extra.get("loss")
    )
    return Solution(
        problem=prob.name,
        d=dd,
        K=kk,
        W=Wi,
        **{name: float(getattr(sep, name)[slot]) for name in CERTIFIED},
        distances=dist,
        rattlers=certified_rattlers(prob, sep, slot, kk, req.rattler_tol),
        status=status,
        residual=residual,
        status_note=out.notes[slot],
        restarts=out.restarts,
        hits=out.hits[slot],
        wall_s=wall,
        search=search,
        **extra,
    )


def solve_tammes(
    d: int | Sequence[int],
    K: int | Sequence[int],
    *,
    key: jax.Array | None = None,
    seed: int | None = None,
    solver: SolverSettings | None = None,
    search: SearchSettings | None = None,
    time_limit: float | None = None,
    initial: dict | None = None,
    progress=None,
) -> Solution | list[Solution]:
    """Tammes codes (eq. 11): K unit vectors in R^d with the largest minimum pairwise angle, for every
    pair of the cross product d x K; the global search (:mod:`gnc_jax._src.search`) for K >= 13.

    Args:
      d: an integer >= 2 or a sequence of them.
      K: the same.
      key, seed, solver, search, time_limit, initial, progress: as for :func:`solve_pairs`.

    Returns:
      A `Solution` for integer d and K, else a list (d outer, K inner).

    >>> sol = solve_tammes(3, 4, seed=0, solver=SolverSettings(restarts=8))  # the regular tetrahedron
    >>> round(sol.min_angle_deg, 6), str(sol.status)
    (109.471221, 'optimal')
    """
    return solve(
        "tammes",
        d,
        K,
        key=key,
        seed=seed,
        solver=solver,
        search=search,
        time_limit=time_limit,
        initial=initial,
        progress=progress,
    )


def solve_softmax_code(
    d: int | Sequence[int],
    K: int | Sequence[int],
    *,
    key: jax.Array | None = None,
    seed: int | None = None,
    solver: SolverSettings | None = None,
    search: SearchSettings | None = None,
    time_limit: float | None = None,
    initial: dict | None = None,
    progress=None,
) -> Solution | list[Solution]:
    """Softmax codes (Definition 2.1, eq. 3): K unit vectors in R^d with the largest minimum
    one-vs-rest distance to the convex hull of the others, for every pair of the cross product.

    Args:
      d: an integer >= 2 or a sequence of them.
      K: the same.
      key, seed, solver, search, time_limit, initial, progress: as for :func:`solve_pairs`.

    Returns:
      A `Solution` for integer d and K, else a list (d outer, K inner).

    >>> sol = solve_softmax_code(3, 4, seed=0, solver=SolverSettings(restarts=8))  # the simplex
    >>> round(sol.rho_one_vs_rest, 9), str(sol.status)  # rho = K / (K - 1)
    (1.333333333, 'optimal')
    """
    return solve(
        "softmax-code",
        d,
        K,
        key=key,
        seed=seed,
        solver=solver,
        search=search,
        time_limit=time_limit,
        initial=initial,
        progress=progress,
    )


def solve_hardmax(
    d: int | Sequence[int],
    K: int | Sequence[int],
    n: int = 1,
    *,
    key: jax.Array | None = None,
    seed: int | None = None,
    solver: SolverSettings | None = None,
    progress=None,
) -> Solution | list[Solution]:
    """The HardMax problem (5): classifiers W and n features per class H, whose optimal W is a softmax
    code (Theorem 3.2); the solution carries H with its GNC1 and GNC3 (eqs. 6, 8).

    Args:
      d: an integer >= 2 or a sequence of them.
      K: the same.
      n: features per class (>= 1).
      key, seed, solver, progress: as for :func:`solve_pairs`.

    Returns:
      A `Solution` (with ``H`` of shape (d, n K), class-major) for integer d and K, else a list.

    >>> sol = solve_hardmax(2, 3, n=2, seed=0, solver=SolverSettings(restarts=8))
    >>> round(sol.rho_one_vs_rest, 9), str(sol.status), sol.H.shape, round(sol.gnc1, 9)
    (1.5, 'optimal', (2, 6), 0.0)
    """
    return solve("hardmax", d, K, key=key, seed=seed, solver=solver, n=n, progress=progress)
