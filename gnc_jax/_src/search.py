"""Global search for Tammes codes (eq. 11): a population iterated hole search under a work budget.

Every round, each member of a population of R configurations

1. **relocates** m points (m uniform in 1..``max_moves``; half among the ends of the shortest chords,
   half at random) into the largest holes of the others (the best of ``holes_per_point * K`` random
   points of the sphere by the chord to their nearest point);
2. **finishes** with a short log-sum-exp anneal (:func:`gnc_jax._src.driver.run_schedule`) and, for
   d <= ``interior_max_d``, the interior-point solve of the local problem (:mod:`gnc_jax._src.interior`),
   so that members are compared at their exact local optima; above, the moved points first make room
   by minimising the overlap penalty sum_{i<j} max(0, delta^2 - ||w_i - w_j||^2)^2;
3. is **kept** if its exact minimum chord beats the member's (a member never gets worse).

After each round the worst eighth of the population is replaced by copies of the best eighth. After
``restart_after`` rounds without a gain of the best chord the episode ends and a new population is
drawn from the **proposal sources**: random starts annealed from scratch, symmetric starts of every
rotation group in :data:`GROUPS` whose orbits sum to K (d = 3, :mod:`gnc_jax._src.symmetric`) and
energy continuation (:func:`energy_codes`). Each source's share of the next population follows its
yield: the members of its lineage in the population at the end of the episodes so far (the copies of
the best eighth multiply a good lineage), against the members it contributed, (wins + 1) /
(pulls + 2). No source is chosen by (d, K): one that fits K gets tried, one that yields keeps its share.

The run is bounded by a deterministic work budget (:meth:`SearchSettings.budget`) in *member-steps*:
one anneal step of one member of the pair (a Gram matrix of the K points); a Newton step of the
interior-point solve counts :func:`newton_step_cost`, a symmetric start's step a / K of one (a free
representatives). The same seed on the same kind of device spends the same work and returns the same
bits; ``time_limit`` (wall clock) and Ctrl-C stop it earlier with the best so far. Measurements
behind the defaults are in docs/results.md.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from gnc_jax._src.process import cpu_cores, float64, one_at_a_time
from gnc_jax._src.driver import ValidatedSettings, geometric, retract, riemannian_adam, run_schedule
from gnc_jax._src.errors import InvalidArgument
from gnc_jax._src.geometry import tammes_margin, validate_configuration
from gnc_jax._src.interior import interior_point
from gnc_jax._src.objectives import TAMMES
from gnc_jax._src.runner import time_limit_seconds
from gnc_jax._src.sphere import normalize_columns
from gnc_jax._src.status import Status
from gnc_jax._src.symmetric import decompositions, symmetric_starts


# The rotation groups whose symmetric starts are proposal sources at d = 3 (every group of order <= 12
# besides the cyclic group of order 1, and the three polyhedral groups); a group joins a run only where
# K is a union of its orbits (:func:`gnc_jax._src.symmetric.decompositions`).
GROUPS = ("C2", "C3", "C4", "C5", "C6", "D2", "D3", "D4", "D5", "D6", "T", "O", "I")


def newton_step_cost(d: int, K: int) -> float:
    """The cost of one Newton step of the interior-point finish in member-steps (the work budget's
    unit: one anneal step of one member, about 4 d K^2 flops for its Gram matrix and gradient): a
    dense Cholesky factorisation of (d - 1) K unknowns, ((d - 1) K)^3 / 3 flops.

    >>> round(newton_step_cost(3, 130), 3)
    28.889
    """
    return (d - 1) ** 3 * K / (12 * d)


def default_population(d: int, K: int) -> int:
    """The population sized to the device: 16 members per CPU core (the vmapped round keeps every
    core busy), or on an accelerator the power of two (32..4096) whose members' K x K chord matrices
    and Newton systems fill a quarter of its memory."""
    device = jax.devices()[0]
    if device.platform == "cpu":
        return 16 * cpu_cores()
    stats = device.memory_stats() or {}
    memory = stats.get("bytes_limit", 16 << 30)
    member = 8 * (8 * K * K + 3 * ((d - 1) * K) ** 2)
    return int(np.clip(2 ** int(np.log2(max(memory / 4 / member, 1))), 32, 4096))


@dataclasses.dataclass(frozen=True)
class SearchSettings(ValidatedSettings):
    """Settings of the iterated hole search (plain values, validated; errors name the field).

    Attributes:
      population: configurations searched in parallel (the restart axis); 0 sizes it to the device
        (:func:`default_population`; the solvers' ``restarts`` keyword sets it too unless
        ``search_population`` is given, :func:`split_overrides`).
      work_per_member: the work budget, in member-steps (:func:`newton_step_cost`) per member of the
        population and per sqrt(K): the search spends at most ``population * work_per_member * sqrt(K)``
        (a larger code takes more rounds to settle).
      rounds: search rounds at most (0: no search); the budget ends a default run first.
      patience: stop after this many rounds without a gain of the best chord by more than
        1e-10 (relative).
      restart_after: end an episode (a new population from the sources) after this many rounds
        without such a gain (0: never).
      init_steps: steps of the anneal (t 0.1 -> 1e-9) of a random member when a population is drawn.
      relax_steps: Adam steps of the overlap-penalty relaxation per round (for d > ``interior_max_d``).
      finish_steps: steps of the log-sum-exp finish (t 1e-3 -> 1e-9) per round.
      long_finish_steps: the other half of the population finishes with this many steps (0: every
        member with ``finish_steps``): a portfolio of two finish lengths, since the anneal's end
        decides which local optimum the interior-point solve reaches; the selection after each
        round moves the better configurations between the halves.
      interior_iters: Newton steps of the interior-point finish for d <= ``interior_max_d``; 0 none.
      interior_max_d: the largest d with the interior-point finish (its Newton system has (d - 1) K
        unknowns; above, the relaxation and the anneal's exact chord judge).
      max_moves: points relocated per member and round at most; 0 picks max(6, K // 8).
      growth: the relaxation's target chord is c (1 + e), e uniform in (0, growth).
      holes_per_point: candidate hole centres per point of the code (random on the sphere).
      symmetric_starts: at d = 3, random starts per decomposition of K into orbits of a group of
        :data:`GROUPS` each time that group is a source of a population; 0: no symmetric sources.
      energy_members: energy-continuation runs each time energy is a source (0: not a source).
      energy_steps: Adam steps per Riesz exponent (2, 6, 12, 24, 48; twice as many at 96).
      cross_seed: :func:`gnc_jax.solve_tammes` first runs the softmax-code annealer on the pair and
        seeds the search with its code, and :func:`gnc_jax.solve_softmax_code` runs the Tammes search
        and starts from its configuration when its margin is larger (the two problems' codes seed
        each other: at d = 4, K = 24 the softmax code is the 24-cell, which the Tammes search misses).
      min_K, max_K: :func:`gnc_jax.solve_pairs` runs the search for pairs with min_K <= K <= max_K
        (below, the annealer alone reaches the proven optima; above, a population of K x K chord
        matrices outgrows memory).
    """

    population: int = 0
    work_per_member: int = 4500
    rounds: int = 1000
    patience: int = 40
    restart_after: int = 10
    init_steps: int = 2000
    relax_steps: int = 300
    finish_steps: int = 300
    long_finish_steps: int = 1000
    max_moves: int = 0
    growth: float = 0.01
    symmetric_starts: int = 32
    holes_per_point: int = 8
    energy_members: int = 4
    energy_steps: int = 1000
    min_K: int = 13
    max_K: int = 512
    cross_seed: bool = True
    interior_iters: int = 80
    interior_max_d: int = 3

    def __post_init__(self):
        self._require_ints(("init_steps", "finish_steps", "work_per_member"), 1)
        self._require_ints(("holes_per_point", "patience", "energy_steps"), 1)
        self._require_ints(
            (
                "population",
                "rounds",
                "max_moves",
                "min_K",
                "max_K",
                "restart_after",
                "energy_members",
                "symmetric_starts",
                "interior_iters",
                "interior_max_d",
                "relax_steps",
                "long_finish_steps",
            ),
            0,
        )
        self._require_positive(("growth",))
        if not isinstance(self.cross_seed, bool):
            raise InvalidArgument(f"cross_seed must be True or False, got {self.cross_seed!r}")

    def exact_for(self, d: int) -> bool:
        """Whether members are finished by the interior-point solve at dimension d."""
        return self.interior_iters > 0 and d <= self.interior_max_d

    def population_for(self, d: int, K: int) -> int:
        """``population``, or the device's default (:func:`default_population`) where it is 0."""
        return self.population or default_population(d, K)

    def budget(self, d: int, K: int) -> float:
        """The work budget of one pair, in member-steps: population x ``work_per_member`` x sqrt(K)."""
        return self.population_for(d, K) * self.work_per_member * K**0.5

    def round_cost(self, d: int, K: int) -> float:
        """Member-steps of one member's search round (relaxation, finish, interior-point solve)."""
        exact = self.exact_for(d)
        newton = newton_step_cost(d, K) * self.interior_iters if exact else 0.0
        return self.finish_cost(d, K) + (0 if exact else self.relax_steps) + newton

    def finish_cost(self, d: int, K: int) -> float:
        """The finish's steps per member, averaged over the population (:attr:`long_finish_steps`)."""
        R = self.population_for(d, K)
        long = R // 2 if self.long_finish_steps else 0
        return (self.finish_steps * (R - long) + self.long_finish_steps * long) / R

    def draw_cost(self, d: int, K: int) -> float:
        """Member-steps of one member of a new population (its anneal and interior-point solve)."""
        return self.round_cost(d, K) - self.finish_cost(d, K) + self.init_steps

    def moves_for(self, K: int) -> int:
        return self.max_moves or max(6, K // 8)

    def applies(self, K: int) -> bool:
        return self.rounds > 0 and self.min_K <= K <= self.max_K


class SearchResult(NamedTuple):
    """Best configuration found by :func:`search_tammes` and how the search went."""

    W: np.ndarray  # (d, K) float64, unit columns: the best configuration found (not polished)
    min_chord: float  # its exact minimum chord
    rounds: int  # rounds run
    elapsed_s: float  # wall time, compilation included
    interrupted: bool  # stopped by Ctrl-C (the result is the best so far)
    stopped_by: str  # 'work', 'rounds', 'patience', 'time_limit' or 'interrupt'
    hits: int  # members of the last population within 1e-9 (relative) of the result's chord
    restarts: int  # populations drawn after the first
    history: tuple  # (round, elapsed_s, best min angle in degrees) after every gain and every round
    recent_gain: float  # relative gain of the best chord over the last ``patience`` rounds (nan: none run)
    work: float = 0.0  # member-steps spent (:func:`newton_step_cost`)
    yields: tuple = ()  # (source, members contributed, members at the episodes' ends) per source

    @property
    def status(self) -> Status:
        """``stalled`` when the patience stopped it (no gain above 1e-10, relative, in ``patience``
        rounds), else ``max_steps`` (its budget, round cap, ``time_limit`` or Ctrl-C ended it)."""
        return Status.STALLED if self.stopped_by == "patience" else Status.MAX_STEPS

    @property
    def note(self) -> str:
        """Why the search stopped, where a budget the caller set cut it short ('' otherwise)."""
        if self.stopped_by in ("time_limit", "interrupt"):
            return f"search stopped by {self.stopped_by} after {self.rounds} rounds"
        return ""


def angle_deg(chord: float) -> float:
    """The angle 2 asin(chord / 2) in degrees (the convention of :mod:`gnc_jax._src.geometry`)."""
    return float(np.degrees(2 * np.arcsin(min(chord / 2, 1.0))))


def split_overrides(overrides: dict) -> tuple[dict, dict]:
    """Keyword overrides split into :class:`SearchSettings` fields (given as ``search_<field>``) and
    the rest (solver settings). Given ``restarts`` (> 0) also set the search's ``population`` unless
    ``search_population`` is given: one restart axis, whichever solver a pair gets (on an H200,
    ``restarts=4096`` lifts d = 3, K = 122 above every CPU run's code within the budget)."""
    search = {k[len("search_") :]: v for k, v in overrides.items() if k.startswith("search_")}
    rest = {k: v for k, v in overrides.items() if not k.startswith("search_")}
    restarts = rest.get("restarts")
    if isinstance(restarts, int) and not isinstance(restarts, bool) and restarts > 0:
        search.setdefault("population", restarts)  # a bad value is refused by name by SolverSettings
    return search, rest


def _chords2(X):
    K = X.shape[1]
    return 2.0 - 2.0 * (X.T @ X) + 4.0 * jnp.eye(K, dtype=X.dtype)


def _min_chord(X):
    return jnp.sqrt(jnp.maximum(jnp.min(_chords2(X)), 0.0))


RIESZ_EXPONENTS = (2.0, 6.0, 12.0, 24.0, 48.0, 96.0)


def _log_riesz_energy(X, s):
    """(1 / s) log sum_{i != j} ||w_i - w_j||^{-s}: the Riesz s-energy on a log scale (finite in
    float64 at any s; the same minimisers)."""
    off = ~jnp.eye(X.shape[1], dtype=bool)
    c2 = jnp.where(off, jnp.maximum(_chords2(X), 1e-300), 1.0)
    return jax.nn.logsumexp(jnp.where(off, -0.5 * s * jnp.log(c2), -jnp.inf)) / s


def _energy_schedule(steps: int):
    """Riesz exponents and Adam step sizes of the energy continuation: ``steps`` per exponent at
    0.01, twice as many at the last at 0.002."""
    n = [steps] * (len(RIESZ_EXPONENTS) - 1) + [2 * steps]
    exponents = jnp.concatenate([jnp.full(k, e) for k, e in zip(n, RIESZ_EXPONENTS)])
    rates = jnp.concatenate([jnp.full(k, 0.01 if i < len(n) - 1 else 0.002) for i, k in enumerate(n)])
    return exponents, rates


@functools.cache
def _programs(d: int, K: int, s: SearchSettings):
    """The jitted population draw, search round and energy continuation of one (d, K) (cached per
    settings; ``s.population`` is set)."""
    R, moves, M = s.population, s.moves_for(K), s.holes_per_point * K
    col = jnp.ones(K, bool)
    offsets = TAMMES.smoothing_offsets(col)
    value_and_grad = lambda p, t: TAMMES.value_and_grad(p, offsets, t)
    init_temps = geometric(0.1, 1e-9, s.init_steps)
    seed_temps = geometric(1e-3, 1e-9, s.init_steps)
    finish_temps = geometric(1e-3, 1e-9, s.finish_steps)
    long_temps = geometric(1e-3, 1e-9, s.long_finish_steps or 1)
    half = R // 2 if s.long_finish_steps else 0  # the last ``half`` members finish with ``long_temps``
    spacing = K ** (-1.0 / (d - 1))

    anneal_opt = riemannian_adam({"W": col})
    relax_opt = riemannian_adam({"W": col}, eps=1e-8)
    exponents, energy_rates = _energy_schedule(s.energy_steps)

    def anneal(X, temps):
        return run_schedule(value_and_grad, {"W": X}, anneal_opt, retract, temps, 0.5 * temps).params["W"]

    exact = s.exact_for(d)

    def finish(X, temps):
        """The anneal, then (for d <= ``interior_max_d``) the interior-point solve to the local optimum;
        the better of the two by exact minimum chord."""
        X = anneal(X, temps)
        if not exact:
            return X
        Y = interior_point(X, s.interior_iters)
        return jnp.where(_min_chord(Y) > _min_chord(X), Y, X)

    def energy(X):
        energy_and_grad = lambda p, e: jax.value_and_grad(lambda p: _log_riesz_energy(p["W"], e))(p)
        X = run_schedule(energy_and_grad, {"W": X}, relax_opt, retract, exponents, energy_rates).params["W"]
        return anneal(X, finish_temps)

    def penalty(X, delta):
        return jnp.sum(jax.nn.relu(delta**2 - _chords2(X)) ** 2) / delta**4

    def relax(X, delta):
        penalty_and_grad = lambda p, t: jax.value_and_grad(lambda p: penalty(p["W"], delta))(p)
        rates = 0.02 * delta * jnp.linspace(1.0, 0.05, s.relax_steps)
        state = run_schedule(penalty_and_grad, {"W": X}, relax_opt, retract, jnp.zeros_like(rates), rates)
        return state.params["W"]

    def relocate(key, X, i):
        """Point i to the largest hole of the others (best of M random candidates)."""
        C = normalize_columns(jax.random.normal(key, (d, M), X.dtype))
        cos = jnp.where(jnp.arange(K)[None, :] == i, -2.0, C.T @ X)
        return X.at[:, i].set(C[:, jnp.argmin(jnp.max(cos, axis=1))])

    def move(key, X):
        k_m, k_loop = jax.random.split(key)
        m = jax.random.randint(k_m, (), 1, moves + 1)

        def body(j, carry):
            X, key = carry
            key, k_tight, k_rand, k_pick, k_hole = jax.random.split(key, 5)
            nearest = jnp.min(_chords2(X), axis=1)
            tight = jax.random.categorical(k_tight, -(nearest - jnp.min(nearest)) / (1e-3 * spacing**2))
            i = jnp.where(jax.random.uniform(k_pick) < 0.5, tight, jax.random.randint(k_rand, (), 0, K))
            return jnp.where(j < m, relocate(k_hole, X, i), X), key

        X, _ = jax.lax.fori_loop(0, moves, body, (X, k_loop))
        return X

    def member_round(key, X, c, temps):
        k_move, k_growth = jax.random.split(key)
        Y = move(k_move, X)
        if s.relax_steps and not exact:
            Y = relax(Y, c * (1.0 + jax.random.uniform(k_growth, (), X.dtype, 0.0, s.growth)))
        Y = finish(Y, temps)
        cy = _min_chord(Y)
        better = cy > c
        return jnp.where(better, Y, X), jnp.where(better, cy, c)

    @jax.jit
    def draw(key, proposals, proposed, given):
        """A new population: random members annealed from t = 0.1; proposals finished from t = 1e-3,
        and kept as they are where that is not better (``given``: the caller's seeds, kept as they are)."""
        X = normalize_columns(jax.random.normal(key, (R, d, K), jnp.float64))
        X = jnp.where(proposed[:, None, None], proposals, X)
        temps = jnp.where(proposed[:, None], seed_temps, init_temps)
        Y = jax.vmap(finish)(X, temps)
        cX, cY = jax.vmap(_min_chord)(X), jax.vmap(_min_chord)(Y)
        keep = proposed & (given | (cX >= cY))
        return jnp.where(keep[:, None, None], X, Y), jnp.where(keep, cX, cY)

    @jax.jit
    def search_round(key, X, c):
        keys, n = jax.random.split(key, R), R - half
        X0, c0 = jax.vmap(lambda k, x, c: member_round(k, x, c, finish_temps))(keys[:n], X[:n], c[:n])
        if half:
            X1, c1 = jax.vmap(lambda k, x, c: member_round(k, x, c, long_temps))(keys[n:], X[n:], c[n:])
            X0, c0 = jnp.concatenate([X0, X1]), jnp.concatenate([c0, c1])
        X, c = X0, c0
        q = max(1, R // 8)
        order = jnp.argsort(-c)
        src = jnp.arange(R).at[order[R - q :]].set(order[:q])
        return X[src], c[src], src

    @jax.jit
    def energy_draw(key):
        return jax.vmap(energy)(normalize_columns(jax.random.normal(key, (R, d, K), jnp.float64)))

    if exact:  # the interior-point solve factors a batch of matrices by LAPACK
        draw, search_round = one_at_a_time(draw), one_at_a_time(search_round)
    return draw, search_round, energy_draw


@float64
def energy_codes(d: int, K: int, key: jax.Array, settings: SearchSettings | None = None) -> np.ndarray:
    """The configurations (n, d, K) that energy continuation finds from ``energy_members`` random
    starts drawn with ``key``: minimise the Riesz s-energy sum_{i<j} ||w_i - w_j||^{-s} (on a log
    scale) for s = 2, 6, ..., 96 in turn, then the search's finish."""
    s = settings or SearchSettings()
    if not s.energy_members:
        return np.zeros((0, d, K))
    return np.asarray(_programs(d, K, s.replace(population=s.energy_members))[2](key))


def _check_seeds(seeds, d: int, K: int) -> list[np.ndarray]:
    """The given configurations, validated and normalised."""
    out = [validate_configuration(W, "seeds") for W in seeds]
    for A in out:
        if A.shape != (d, K):
            raise InvalidArgument(f"seeds must be ({d}, {K}) configurations, got shape {A.shape}")
    return out


class _Sources:
    """The proposal sources of new populations and their yield (module docstring)."""

    def __init__(self, d: int, K: int, s: SearchSettings):
        self.d, self.K, self.s = d, K, s
        groups = [g for g in GROUPS if decompositions(g, K)] if d == 3 and s.symmetric_starts else []
        self.names = ["random", *groups] + (["energy"] if s.energy_members else [])
        self.pulls = np.zeros(len(self.names))
        self.wins = np.zeros(len(self.names))

    def shares(self, n: int) -> np.ndarray:
        """Members per source for n slots: proportional to (wins + 1) / (pulls + 2), largest
        remainders first (ties to the earlier source)."""
        w = (self.wins + 1) / (self.pulls + 2)
        exact = n * w / w.sum()
        counts = np.floor(exact).astype(int)
        order = np.argsort(-(exact - counts), kind="stable")
        counts[order[: n - counts.sum()]] += 1
        return counts

    def propose(self, name: str, n: int, key: jax.Array) -> tuple[list[np.ndarray], float]:
        """Up to n proposals of a symmetric or energy source, best first, and their work."""
        if name == "energy":
            found = energy_codes(self.d, self.K, key, self.s)
            work = self.s.energy_members * (len(RIESZ_EXPONENTS) + 1) * self.s.energy_steps
            return sorted(found, key=tammes_margin, reverse=True)[:n], work
        pool, work, steps = [], 0.0, self.s.init_steps // 2
        for (a, _), best in zip(
            decompositions(name, self.K),
            symmetric_starts(self.K, key, self.s.symmetric_starts, steps, (name,), n),
        ):
            pool += list(best)
            work += self.s.symmetric_starts * steps * a / self.K
        return sorted(pool, key=tammes_margin, reverse=True)[:n], work

    def draw(self, n: int, key: jax.Array):
        """Proposals for n members (the random source's slots stay empty), their origins and work."""
        proposals, origin, work = [], [], 0.0
        for i, (name, count) in enumerate(zip(self.names, self.shares(n))):
            if count and name != "random":
                found, cost = self.propose(name, int(count), jax.random.fold_in(key, i))
                proposals += found
                origin += [i] * len(found)
                work += cost
        origin += [0] * (n - len(origin))  # random members fill the rest
        return proposals, np.array(origin), work

    def score(self, origin: np.ndarray, drawn: np.ndarray) -> None:
        """An episode ended: the members each source contributed, and those of its lineage now."""
        self.pulls += np.bincount(drawn[drawn >= 0], minlength=len(self.names))
        self.wins += np.bincount(origin[origin >= 0], minlength=len(self.names))

    def yields(self) -> tuple:
        return tuple((n, int(p), int(w)) for n, p, w in zip(self.names, self.pulls, self.wins))


@float64
def search_tammes(
    d: int,
    K: int,
    key: jax.Array,
    settings: SearchSettings | None = None,
    seeds=(),
    time_limit: float | None = None,
    progress=None,
) -> SearchResult:
    """Iterated hole search for a Tammes code of K points on S^{d-1} (module docstring).

    Args:
      d: the dimension (>= 2).
      K: the number of points (>= 2).
      key: a ``jax.random`` key; with the settings and no ``time_limit`` it fixes the answer.
      settings: :class:`SearchSettings` (defaults if None).
      seeds: configurations (d, K) that join the first population as they are (cross-seeding: e.g.
        a softmax code of the same pair); the search never returns anything worse than the best.
      time_limit: seconds; rounds run until the budget, the round cap, the patience or this time is
        spent, whichever comes first.
      progress: a text stream for one line per round (best angle so far, the budget spent, elapsed,
        an upper bound on the time left), or None.

    Returns:
      A `SearchResult`. Ctrl-C during the rounds stops the search and returns the best so far.
    """
    s = settings or SearchSettings()
    time_limit = time_limit_seconds(time_limit)
    t0 = time.perf_counter()
    given = _check_seeds(seeds, d, K)
    s = s.replace(population=s.population_for(d, K))
    R, budget, round_work = s.population, s.budget(d, K), s.population * s.round_cost(d, K)
    draw, search_round, _ = _programs(d, K, s)
    k_draw, k_rounds, k_sources = jax.random.split(key, 3)
    sources = _Sources(d, K, s)

    def population(episode: int, given: list):
        """A new population from the given configurations and the sources; its origins and work."""
        proposals, origin, work = sources.draw(R - min(len(given), R), jax.random.fold_in(k_sources, episode))
        chosen = (given + proposals)[:R]
        padded, proposed = np.zeros((R, d, K)), np.arange(R) < len(chosen)
        for i, A in enumerate(chosen):
            padded[i] = A
        origin = np.concatenate([np.full(min(len(given), R), -1), origin])[:R]
        X, c = draw(
            jax.random.fold_in(k_draw, episode), jnp.asarray(padded), proposed, np.arange(R) < len(given)
        )
        return X, c, origin, work + R * s.draw_cost(d, K)

    X, c, origin, spent = population(0, given)
    drawn = origin.copy()
    best_W, best = None, -1.0
    history, best_after = [], []  # best_after[r]: the best chord after round r
    rounds, restarts, last_gain, stopped_by = 0, 0, 0, "rounds"

    def take_best():
        """The population's best member becomes the result if its exact chord is larger; whether it
        gained more than 1e-10 (relative)."""
        nonlocal best_W, best
        W = np.asarray(X[int(np.argmax(np.asarray(c)))], np.float64)
        chord, before = tammes_margin(W), best
        if chord > best:
            best_W, best = W, chord
        return chord > before * (1 + 1e-10)

    def report():
        history.append((rounds, time.perf_counter() - t0, angle_deg(best)))
        if progress is not None:
            elapsed = history[-1][1]
            eta = elapsed / spent * max(budget - spent, 0.0)  # at most: patience may stop it sooner
            if time_limit is not None:
                eta = min(eta, max(time_limit - elapsed, 0.0))
            print(
                f"search tammes d={d} K={K}: best {angle_deg(best):.9f} deg after round {rounds} "
                f"({restarts} restarts, {spent / budget:.0%} of the budget), {elapsed:.1f} s, "
                f"ETA <= {eta:.0f} s",
                file=progress,
                flush=True,
            )

    take_best()
    best_after.append(best)
    try:
        while rounds < s.rounds:
            if spent + round_work > budget:
                stopped_by = "work"
                break
            if time_limit is not None and time.perf_counter() - t0 >= time_limit:
                stopped_by = "time_limit"
                break
            X, c, src = search_round(jax.random.fold_in(k_rounds, rounds), X, c)
            origin, spent, rounds = origin[np.asarray(src)], spent + round_work, rounds + 1
            if take_best():
                last_gain = rounds
            best_after.append(best)
            report()
            if rounds - last_gain >= s.patience:
                stopped_by = "patience"
                break
            stale = rounds > last_gain and (rounds - last_gain) % max(s.restart_after, 1) == 0
            if s.restart_after and stale and spent + R * s.draw_cost(d, K) + round_work <= budget:
                sources.score(origin, drawn)
                restarts += 1
                X, c, origin, work = population(restarts, [])
                drawn, spent = origin.copy(), spent + work
                if take_best():
                    last_gain = rounds
                best_after[-1] = best
    except KeyboardInterrupt:
        stopped_by = "interrupt"
    sources.score(origin, drawn)
    since = best_after[max(0, len(best_after) - 1 - s.patience)]
    recent_gain = (best_after[-1] - since) / since if len(best_after) > 1 else float("nan")
    try:
        if not history:  # the history ends at the result
            report()
    except KeyboardInterrupt:  # while the line was written: the result stands
        stopped_by = "interrupt"
    return SearchResult(
        W=np.asarray(best_W, np.float64),
        min_chord=best,
        rounds=rounds,
        elapsed_s=time.perf_counter() - t0,
        interrupted=stopped_by == "interrupt",
        stopped_by=stopped_by,
        hits=int(np.sum(np.asarray(c) >= best * (1 - 1e-9))),
        restarts=restarts,
        history=tuple(history),
        recent_gain=recent_gain,
        work=spent,
        yields=sources.yields(),
    )
