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
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from gnc_jax._src import geometry, metrics, runner
from gnc_jax._src.process import float64, one_at_a_time, release_compiled_programs
from gnc_jax._src.progress import step_meter
from gnc_jax._src.driver import STATUS_NAMES, SolverSettings, axis_map, solve_pair
from gnc_jax._src.errors import InvalidArgument
from gnc_jax._src.objectives import Problem, get_problem
from gnc_jax._src.polish import polish
from gnc_jax._src.search import SearchSettings, search_stack, split_overrides
from gnc_jax._src.sphere import normalize_columns
from gnc_jax._src.status import SolutionCore, Status
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
      wall_s: wall time of the bucket call (compile included) divided among its pairs.
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
            params = {k: normalize_columns(v) for k, v in params.items()}
        return res, params

    return jax.jit(run)


@one_at_a_time
@jax.jit
def _certify_vmapped(W, col_mask):
    return jax.vmap(geometry.separation_masked)(W, col_mask)


def _certify(params, dims, K_max):
    """Certified separation of a bucket of padded configurations (exact QPs), as numpy arrays.

    A program of its own, outside the sharded solve: it works per pair, not per restart, and its
    data-dependent while_loop has no business being partitioned across devices. ``dims`` are the
    real pairs (the first slots of the bucket). Buckets above
    ``geometry.SCREEN_MIN_K`` columns are certified pair by pair with screened QPs (features, where
    the problem has one per class, rank the first candidates) and padded back to the bucket.
    """
    W = params["W"]
    if K_max <= geometry.SCREEN_MIN_K:
        Ks = [kk for _, kk in dims] + [dims[0][1]] * (W.shape[0] - len(dims))  # padding slots
        col_mask = jnp.asarray(np.arange(K_max)[None, :] < np.array(Ks)[:, None])
        return jax.device_get(_certify_vmapped(jnp.asarray(W), col_mask))
    seps = []
    for slot, (dd, kk) in enumerate(dims):
        H = params.get("H")
        dirs = H[slot, :dd, :kk] if H is not None and H.shape[-1] == W.shape[-1] else None
        sep = jax.device_get(geometry.separation(W[slot, :dd, :kk], directions=dirs))
        pad = K_max - kk
        seps.append(
            sep._replace(
                nearest_chords=np.pad(sep.nearest_chords, (0, pad), constant_values=np.inf),
                distances=np.pad(sep.distances, (0, pad), constant_values=np.inf),
                lower_bounds=np.pad(sep.lower_bounds, (0, pad), constant_values=np.inf),
                weights=np.pad(sep.weights, ((0, pad), (0, pad))),
            )
        )
    return jax.tree_util.tree_map(lambda *a: np.stack(a), *seps)


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
        if problem.name == "hardmax":
            pair["H"] = np.array(params["H"][slot, :dd, : n * kk])
        elif problem.name == "softmax-code":
            # Start from the exact features of eq. (9): the joint score then equals rho_one-vs-rest(W),
            # and the polish can only raise it. A point inside the hull of the rest has none: any
            # unit vector will do there, take w_k.
            H = geometry.features_from_weights(Wi, sep.weights[slot, :kk, :kk])
            pair["H"] = np.where(np.isnan(H), Wi, H)
        res = polish(problem, pair, max_iter=settings.polish_iters_for(unknowns))
        params["W"][slot, :dd, :kk] = res.params["W"]
        if problem.name == "hardmax":
            params["H"][slot, :dd, : n * kk] = res.params["H"]
        results.append(res)
    return results


def _gap_to_proven_optimum(problem: str, d: int, K: int, sep, slot, loss=None) -> float | None:
    """How far the certified value is from the proven optimum of the pair (None where none is known):
    Theorem 3.3's rho for softmax codes (compared with the certified lower bound), the closed-form
    max-cosine for Tammes; for HardMax the larger of W's gap and that of the objective (5) at (W, H),
    ``loss``, whose optimum is -rho (Theorem 3.2)."""
    if problem == "tammes":
        best = tammes_closed_form(d, K)
        return None if best is None else float(sep.max_cos[slot]) - best
    closed = softmax_code_closed_form(d, K)
    if closed is None:
        return None
    gap = closed[0] - float(sep.rho_lower[slot])
    return gap if loss is None else max(gap, loss + closed[0])


def _problem_score(problem: str, sep, slot):
    """What the problem maximises, from a certification: the min angle (Tammes) or rho_one-vs-rest."""
    value = sep.min_angle_deg if problem == "tammes" else sep.rho_one_vs_rest
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
    **kwargs,
) -> Solution | list[Solution]:
    """Solve ``problem`` for every pair of the cross product d x K in batched, compiled calls.

    Args:
      problem: 'tammes' (eq. 11), 'softmax-code' (eq. 3) or 'hardmax' (eq. 5; give ``n``).
      d: an integer or a sequence of integers (>= 2 each).
      K: the same.
      **kwargs: as for :func:`solve_pairs` (``key`` or ``seed``, ``n``, ``settings``, overrides).

    Returns:
      A `Solution` if d and K are both integers, else a list in the order of the cross product
      (d outer, K inner).
    """
    ds = runner.positive_ints("d", d)
    Ks = runner.positive_ints("K", K)
    sols = solve_pairs(problem, [(dd, kk) for dd in ds for kk in Ks], **kwargs)
    scalar = isinstance(d, (int, np.integer)) and isinstance(K, (int, np.integer))
    return sols[0] if scalar else sols


@float64
def solve_pairs(
    problem: str,
    pairs: Sequence[tuple[int, int]],
    *,
    key: jax.Array | None = None,
    seed: int | None = None,
    settings: SolverSettings | None = None,
    rattler_tol: float = 1e-6,
    n: int = 1,
    search: SearchSettings | None = None,
    time_limit: float | None = None,
    initial: dict | None = None,
    progress=None,
    release_memory: bool = False,
    **overrides,
) -> list[Solution]:
    """Solve ``problem`` for a list of (d, K) pairs, one compiled call per size bucket.

    Args:
      problem: 'tammes' (eq. 11), 'softmax-code' (eq. 3) or 'hardmax' (eq. 5, with ``n`` features
        per class; the solution carries H and its GNC1/GNC3).
      pairs: (d, K) pairs, d >= 2 and K >= 2.
      key: a ``jax.random`` key; or ``seed`` (an int). Exactly one is required. The same call gives
        the same answer bit for bit. A pair's result depends only on the key, the pair and the
        settings, not on what else is in the batch, up to floating-point rounding (a batch of another
        size sums in another order): its certified values agree to ~1e-9.
      settings: :class:`SolverSettings` (defaults if None); keyword ``overrides`` replace fields,
        e.g. ``restarts=256``.
      rattler_tol: tolerance of the rattler test.
      n: features per class (HardMax only).
      search: :class:`gnc_jax._src.search.SearchSettings` of the global search (defaults if None;
        overrides ``search_<field>=...`` replace its fields, e.g. ``search_rounds=0`` turns it off).
        Tammes pairs with K >= ``search.min_K`` are solved by the iterated hole search
        (:mod:`gnc_jax._src.search`) instead of the annealer; with ``search.cross_seed`` the
        softmax-code annealer's code seeds each Tammes search, and softmax-code pairs with such K
        also run the search and start their polish from the Tammes configuration when its
        one-vs-rest margin is larger (the softmax code reported is never below the margin of the
        Tammes code found).
      time_limit: seconds per searched pair (from when its search starts; pairs searched together,
        ``search_stack``, share the clock): its search stops after the round that spends them and
        returns the best configuration so far (anytime). Ctrl-C does the same.
      initial: {(d, K): configuration or list of configurations} that join the search's population
        (e.g. the softmax codes of a store, to seed the Tammes search).
      progress: a text stream (e.g. ``sys.stderr``) for the search's per-round lines, a line after
        each bucket (pairs done, elapsed, ETA) and, while a bucket's compiled solve runs longer than
        10 s, a line every 10 s (steps done, ETA); or None.
      release_memory: drop JAX's compilation caches after each search (a pair or a stack) when the
        process's memory maps near the kernel's limit
        (:func:`gnc_jax._src.process.release_compiled_programs`; this also drops the caller's
        compiled programs, so it is off unless asked; ``gnc-jax`` asks).

    Returns:
      One `Solution` per pair, in order.
    """
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
    settings = settings or SolverSettings()
    search = search or SearchSettings()
    search_overrides, overrides = split_overrides(overrides)
    if search_overrides:
        search = search.replace(**search_overrides)
    if overrides:
        settings = settings.replace(**overrides)
    initial = _initial_configs(initial, pairs)
    n_dev = runner.device_count()
    # One key per pair, derived from the pair itself: results do not depend on the batch.
    pair_key = lambda dd, kk: runner.instance_key(key, dd, kk)
    searched = {}  # the searches run
    if problem in ("tammes", "softmax-code"):
        if problem == "tammes" and search.cross_seed:
            # Cross-seeding: the softmax-code annealer's code of each searched pair joins the search's
            # first population.
            seeded = [i for i, (dd, kk) in enumerate(pairs) if search.applies(kk)]
            if seeded:
                codes = solve_pairs(
                    "softmax-code",
                    [pairs[i] for i in seeded],
                    key=key,
                    settings=settings.replace(lp_polish_iters=0, restarts=settings.restarts or 8),
                    search=search.replace(rounds=0),
                )
                for i, code in zip(seeded, codes):
                    initial[i] = [*initial.get(i, ()), code.W]
        stacks = {}  # pairs searched together: one dimension, one padded size
        for i, (dd, kk) in enumerate(pairs):
            if search.applies(kk) and (problem == "tammes" or search.cross_seed):
                stacks.setdefault((dd, search.padded(kk)), []).append(i)
        for (dd, _), members in stacks.items():
            found = search_stack(
                dd,
                [pairs[i][1] for i in members],
                [pair_key(*pairs[i]) for i in members],
                search,
                [initial.get(i, ()) for i in members],
                time_limit,
                progress,
            )
            searched.update(zip(members, found))
            if release_memory:  # each stack compiles programs of its own
                release_compiled_programs()
    # Tammes pairs the search solved form groups of their own; everything else is bucketed by size
    # and by the restarts the pair gets (so a pair's result does not depend on the rest of the batch).
    solved = set(searched) if problem == "tammes" else set()

    def bucket_of(i):
        if i in solved:
            return (0, i)
        dd, kk = pairs[i]
        restarts = settings.restarts_for(dd, kk, n_dev)
        return 1, runner.bucket_size(dd), runner.bucket_size(kk, minimum=8), restarts

    def solve(bucket, members, padded):
        """The bucket's configurations (solved, cross-seeded, polished) and their certification."""
        dims = [pairs[i] for i in members]
        if members[0] in solved:
            found = searched[members[0]]
            params = {"W": found.W[None].copy()}
            statuses, hits, restarts = [found.status], [found.hits], search.population_for(*dims[0])
            residual = np.array([found.recent_gain])
            K_max = dims[0][1]
        else:
            _, d_max, K_max, restarts = bucket
            dsb, Ksb = (np.array([pairs[i][j] for i in padded]) for j in (0, 1))
            keys = jnp.stack([pair_key(dd, kk) for dd, kk in zip(dsb, Ksb)])
            fn = _bucket_solver(
                prob, settings.replace(restarts=restarts), d_max, K_max, n_dev, progress is not None
            )
            label = f"solve {problem} (d <= {d_max}, K <= {K_max}, {len(members)} pair(s))"
            with step_meter(progress, label, settings.schedule_steps):
                res, params = jax.device_get(fn(keys, jnp.asarray(dsb), jnp.asarray(Ksb)))
            params = {k: np.array(v) for k, v in params.items()}
            statuses = [STATUS_NAMES[int(v)] for v in np.array(res.status)]
            residual = np.array(res.change, np.float64)
            hits = [int(np.sum(sc >= sc.max() - 1e-9)) for sc in np.asarray(res.scores)]
        sep = _certify(params, dims, K_max)
        # Cross-seeding: a better configuration from the search or ``initial`` replaces the solver's
        # before the polish (which can only improve it).
        swapped = False
        for slot, i in enumerate(members):
            dd, kk = dims[slot]
            alternatives = []
            if i not in solved:  # a solved pair's ``initial`` were its search's seeds
                alternatives += [*initial.get(i, ()), *([searched[i].W] if i in searched else [])]
            best = _problem_score(problem, sep, slot)
            for A in alternatives:
                score = _problem_score(problem, geometry.separation(A), None)
                if score > best:
                    best = score
                    params["W"][slot, :dd, :kk] = A
                    swapped = True
        if swapped:
            sep = _certify(params, dims, K_max)
        notes = [searched[i].note if i in searched else "" for i in members]  # a search cut short
        if settings.lp_polish_iters:
            polished = _polish_bucket(prob, params, sep, dims, settings)
            for slot, res in enumerate(polished):
                if res is not None and statuses[slot] != Status.NONFINITE:
                    statuses[slot], residual[slot] = res.status, res.residual
                    notes[slot] = "; ".join(filter(None, (notes[slot], res.note)))
            sep = _certify(params, dims, K_max)
        return params, sep, statuses, residual, notes, hits, restarts

    def finish(bucket, members, raw, wall):
        params, sep, statuses, residual, notes, hits, restarts = raw
        return [
            _solution(
                prob,
                n,
                pairs[i],
                params,
                sep,
                slot,
                rattler_tol,
                statuses[slot],
                float(residual[slot]),
                notes[slot],
                restarts,
                hits[slot],
                wall + (searched[i].elapsed_s if i in searched else 0.0),
            )
            for slot, i in enumerate(members)
        ]

    return runner.run_buckets(len(pairs), bucket_of, solve, finish, progress, f"solve {problem}")


def _solution(prob, n, pair, params, sep, slot, rattler_tol, status, residual, note, restarts, hits, wall):
    """The :class:`Solution` of the pair in ``slot`` of a solved, certified bucket."""
    problem = prob.name
    dd, kk = pair
    dist = np.asarray(sep.distances[slot, :kk])
    Wi = np.array(params["W"][slot, :dd, :kk])
    rho = float(sep.rho_one_vs_rest[slot])
    if problem == "tammes":
        ratt = geometry.above_minimum(sep.nearest_chords[slot, :kk], rattler_tol)
    elif np.all(np.isfinite(dist)):
        ratt = geometry.above_minimum(dist, rattler_tol)
    else:  # bounded certification: certainly rattlers
        ratt = np.flatnonzero(np.asarray(sep.lower_bounds[slot, :kk]) > rho + rattler_tol)
    extra = {}
    if problem == "hardmax":
        Hi = np.array(params["H"][slot, :dd, : n * kk])
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
    gap = _gap_to_proven_optimum(problem, dd, kk, sep, slot, extra.get("loss"))
    if gap is not None and gap <= 1e-12 and status != Status.NONFINITE:
        status, residual = Status.OPTIMAL, max(gap, 0.0)
    return Solution(
        problem=problem,
        d=dd,
        K=kk,
        W=Wi,
        **{name: float(getattr(sep, name)[slot]) for name in CERTIFIED},
        distances=dist,
        rattlers=ratt,
        status=status,
        residual=residual,
        status_note=note,
        restarts=restarts,
        hits=hits,
        wall_s=wall,
        **extra,
    )


def solve_tammes(d, K, **kwargs):
    """Tammes codes (eq. 11): maximise the minimum pairwise angle. See :func:`solve`."""
    return solve("tammes", d, K, **kwargs)


def solve_softmax_code(d, K, **kwargs):
    """Softmax codes (Definition 2.1, eq. 3): maximise the minimum one-vs-rest distance.
    See :func:`solve`."""
    return solve("softmax-code", d, K, **kwargs)


def solve_hardmax(d, K, n: int = 1, **kwargs):
    """The HardMax problem (5): (W, H) with n features per class; W is a softmax code (Theorem 3.2)
    and the solution reports H with GNC1 and GNC3. See :func:`solve`."""
    return solve("hardmax", d, K, n=n, **kwargs)
