"""Global search for Tammes codes (eq. 11): a population iterated hole search under a work budget.

Every round, each member of a population of R configurations

1. **relocates** m points (m uniform in 1..``max_moves``; half among the ends of the shortest chords,
   half at random) into the largest holes of the others (the best of ``holes_per_point * K`` random
   points of the sphere by the chord to their nearest point), or, for a ``rotate_share`` of the
   members, **rotates a cap** of points about its centre (:func:`rotate_cap`);
2. **finishes** with a short log-sum-exp anneal (:func:`gnc_jax._src.driver.run_schedule`) and, where
   the budget affords it (:meth:`SearchSettings.exact_plan`), the interior-point solve of the local
   problem (:mod:`gnc_jax._src.interior`), so that members are compared at their exact local optima;
   elsewhere the moved points first make room by minimising the overlap penalty
   sum_{i<j} max(0, delta^2 - ||w_i - w_j||^2)^2, and only the best eighth of the candidates get the
   interior-point solve where the budget affords that;
3. is **kept** if its exact minimum chord beats the member's (a member never gets worse).

After each round the worst eighth of the population is replaced by copies of the best eighth. After
``restart_after`` rounds without a gain of the best chord above the finish's resolution
(:meth:`SearchSettings.restart_gain_for`: a smaller gain is the finish refining the same code) the
episode ends and a new population is drawn from the **proposal sources**: random starts annealed from
scratch, symmetric starts of every rotation group in :data:`GROUPS` whose orbits sum to K (d = 3,
:mod:`gnc_jax._src.symmetric`) and energy continuation (:func:`energy_codes`). Each source's share
of the next population follows its yield: the members of its lineage in the population at the end of
the episodes so far (the copies of the best eighth multiply a good lineage), against the members it
contributed, (wins + 1) / (pulls + 2). No source is chosen by (d, K): one that fits K gets tried, one
that yields keeps its share.

The run is bounded by a deterministic work budget (:meth:`SearchSettings.budget`) in *member-steps*:
one anneal step of one member of the pair (a Gram matrix of the K points); a Newton step of the
interior-point solve counts :func:`newton_step_cost`, a symmetric start's step a / K of one (a free
representatives). A round runs, and a new population is drawn, only where its work fits what is left
of the budget (a new population's random starts, its proposals, priced before they run, and one
round); only the first population is drawn whatever it costs. The same seed on the same kind of
device spends the same work and returns the same bits (on a GPU up to the rounding of XLA's
reductions, which may differ from run to run);
``time_limit`` (wall clock) and Ctrl-C stop it earlier with the best so far, and so does reaching a
proven optimum (a closed form of :func:`gnc_jax._src.theory.tammes_closed_form`: nothing is better).

Several pairs of one d can share the compiled programs (:func:`search_stack`): each is padded to a
common number of points, masked, and given a slot of the round, and the pairs that need a new
population at once draw it together (the draw and the energy continuation over the slots, each
group's symmetric starts in one padded program), so that an accelerator that one population leaves
idle runs many pairs at once. Measurements behind the defaults are in
docs/results.md.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from gnc_jax._src.process import CompiledAhead, cpu_cores, float64, one_at_a_time
from gnc_jax._src.driver import ValidatedSettings, geometric, retract, riemannian_adam, run_schedule
from gnc_jax._src.errors import InvalidArgument
from gnc_jax._src.geometry import tammes_margin, validate_configuration
from gnc_jax._src.interior import interior_point
from gnc_jax._src.objectives import TAMMES
from gnc_jax._src.runner import bucket_size, over_slots, time_limit_seconds
from gnc_jax._src.sphere import normalize_columns
from gnc_jax._src.status import OPTIMAL_GAP, Status
from gnc_jax._src.symmetric import (
    compile_padded_starts,
    compile_symmetric_starts,
    decompositions,
    padded_symmetric_starts,
    symmetric_starts,
)
from gnc_jax._src.theory import tammes_closed_form


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
        (:func:`default_population`).
      work_per_member: the work budget, in member-steps (:func:`newton_step_cost`) per member of the
        population and per sqrt(K): the search spends at most ``population * work_per_member * sqrt(K)``
        (a larger code takes more rounds to settle).
      rounds: search rounds at most (0: no search); the budget ends a default run first.
      patience: stop after this many rounds without a gain of the best chord by more than
        1e-10 (relative).
      restart_after: end an episode (a new population from the sources) after this many rounds
        without a gain of the best chord by more than ``restart_gain`` (0: never), where the new
        population and a round fit what is left of the budget (else the episode goes on).
      restart_gain: the relative gain of the best chord that keeps an episode going; 0 (the
        default): the resolution of the members' finish (:meth:`restart_gain_for`), so that an
        episode whose best only creeps by what the finish leaves undone ends (docs/results.md, "A
        restart rule for creeping episodes").
      init_steps: steps of the anneal (t 0.1 -> 1e-9) of a random member when a population is drawn.
      relax_steps: Adam steps of the overlap-penalty relaxation per round (where the finish is not
        exact: :meth:`exact_for`).
      finish_steps: steps of the log-sum-exp finish (t 1e-3 -> 1e-9) per round.
      long_finish_steps: the other half of the population finishes with this many steps (0: every
        member with ``finish_steps``): a portfolio of two finish lengths, since the anneal's end
        decides which local optimum the interior-point solve reaches; the selection after each
        round moves the better configurations between the halves.
      interior_iters: Newton steps of the interior-point finish at most (fewer where the budget
        affords only fewer, down to half of them: :meth:`newton_steps_for`); 0 none.
      exact_best: where the budget does not afford the interior-point finish of every member, each
        round's best eighth of candidates (the eighth the selection copies) get it where it affords
        that (:meth:`exact_plan`), so that the best is still judged at its exact local optimum.
      max_moves: points relocated per member and round at most; 0 picks max(6, K // 8).
      growth: the relaxation's target chord is c (1 + e), e uniform in (0, growth).
      holes_per_point: candidate hole centres per point of the code (random on the sphere).
      rotate_share: the probability that a member's move is a cap rotation
        (:func:`rotate_cap`) instead of relocations: a relocated point mostly finishes back at the
        member's own local optimum, a rotated cap changes every contact along its rim.
      symmetric_starts: at d = 3, random starts per decomposition of K into orbits of a group of
        :data:`GROUPS` each time that group is a source of a population; 0: no symmetric sources.
      energy_members: energy-continuation runs each time energy is a source (0: not a source).
      energy_steps: Adam steps per Riesz exponent (2, 6, 12, 24, 48; twice as many at 96).
      cross_seed: :func:`gnc_jax.solve_tammes` first runs the softmax-code annealer on the pair and
        seeds the search with its code, and :func:`gnc_jax.solve_softmax_code` solves the pair as a
        Tammes pair with the same arguments and starts from that code when its margin is larger (the
        two problems' codes seed each other: at d = 4, K = 24 the softmax code is the 24-cell, which
        the Tammes search misses); outside [min_K, max_K] that code is the softmax code's start, in
        place of the softmax-code annealer's (False: the annealer's).
      stack: pairs of one dimension searched at once by :func:`gnc_jax.solve_pairs` (and
        ``gnc-jax sweep``), their populations stacked in one compiled round (:func:`search_stack`):
        pairs of one size bucket (:meth:`padded`), a default population divided among them.
        1 (the default): one pair at a time, unpadded; an accelerator that one population leaves
        idle fills with several.
      min_K, max_K: :func:`gnc_jax.solve_pairs` runs the search for pairs with min_K <= K <= max_K
        (below, the annealer alone reaches the proven optima; above, a population of K x K chord
        matrices outgrows memory).
    """

    population: int = 0
    work_per_member: int = 4500
    rounds: int = 1000
    patience: int = 40
    restart_after: int = 10
    restart_gain: float = 0.0
    init_steps: int = 2000
    relax_steps: int = 300
    finish_steps: int = 300
    long_finish_steps: int = 1000
    max_moves: int = 0
    growth: float = 0.01
    symmetric_starts: int = 32
    holes_per_point: int = 8
    rotate_share: float = 0.5
    energy_members: int = 4
    energy_steps: int = 1000
    stack: int = 1
    min_K: int = 13
    max_K: int = 512
    cross_seed: bool = True
    interior_iters: int = 80
    exact_best: bool = True

    def __post_init__(self):
        self._require_ints(("init_steps", "finish_steps", "work_per_member"), 1)
        self._require_ints(("holes_per_point", "patience", "energy_steps", "stack"), 1)
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
                "relax_steps",
                "long_finish_steps",
            ),
            0,
        )
        self._require_positive(("growth",))
        if self.restart_gain != 0:
            self._require_positive(("restart_gain",))
        share = self.rotate_share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
            raise InvalidArgument(f"rotate_share must be a number in [0, 1], got {share!r}")
        for name in ("cross_seed", "exact_best"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidArgument(f"{name} must be True or False, got {getattr(self, name)!r}")

    def exact_plan(self, d: int, K: int) -> tuple[int, int]:
        """The interior-point finish of a pair (d, K): (members solved per round, Newton steps).

        Every member of the population where the budget affords it, else (``exact_best``) the best
        eighth of the round's candidates: the first of these with which the budget affords one
        episode of rounds after a draw, ``(work_per_member sqrt(K) - draw) / round >=
        restart_after`` (``patience`` if that is 0), with the most steps up to ``interior_iters``
        that it affords: all of them for every member where the best eighth is the alternative (a
        partial finish of every member is bought with rounds), else at least half (40 steps finish
        as well as 80 at d = 3); the draw and the round are priced with those steps
        (:func:`newton_step_cost`, ((d - 1) K)^3 / 3 flops each) and, where not every member is
        solved, the overlap relaxation. The best eighth's Newton work is at most the rest of its
        round's (finish and relaxation), so that it takes at most half of a round however its price
        grows with K (the budget grows with sqrt(K)). (0, 0) where neither fits: no exact finish.
        The price decides, not a threshold in d (docs/results.md, "Fewer Newton steps where 80 do
        not fit", "The exact finish of the best eighth where every member's does not fit", "A cap
        on the best eighth's Newton work" and "Every member's finish only with all its Newton
        steps"). K is taken as the pair's programs run it (:meth:`padded`).

        >>> s = SearchSettings(population=32)
        >>> [s.exact_plan(*p) for p in ((3, 130), (4, 41), (4, 42), (5, 13), (6, 100), (8, 64))]
        [(32, 80), (32, 80), (4, 80), (4, 80), (4, 43), (0, 0)]
        >>> s.replace(exact_best=False).exact_plan(4, 64)  # every member, with the steps that fit
        (32, 69)
        """
        R, K = self.population_for(d, K), self.padded(K)
        r = self.restart_after or self.patience
        eighth = max(1, R // 8)
        sizes = (R, eighth) if self.exact_best and eighth < R else (R,)
        for members in sizes:
            rest = self.finish_cost(d, K) + (0 if members == R else self.relax_steps)  # the round less Newton
            step = newton_step_cost(d, K) * members / R
            n = (self.work_per_member * K**0.5 - self.init_steps - r * rest) / ((r + 1) * step)
            if members < R:
                n = min(n, rest / step)
            n = min(self.interior_iters, math.floor(n))
            full = members == R and len(sizes) > 1  # every member only with all its steps
            if n >= (self.interior_iters if full else max(1, self.interior_iters / 2)):
                return members, n
        return 0, 0

    def newton_steps_for(self, d: int, K: int) -> int:
        """The Newton steps of the pair's interior-point finish (:meth:`exact_plan`); 0 none."""
        return self.exact_plan(d, K)[1]

    def exact_for(self, d: int, K: int) -> bool:
        """Whether every member of a pair (d, K) is finished by the interior-point solve
        (:meth:`exact_plan`); else the relaxation makes room for the moved points."""
        members, steps = self.exact_plan(d, K)
        return steps > 0 and members == self.population_for(d, K)

    def restart_gain_for(self, d: int, K: int) -> float:
        """``restart_gain``, or where it is 0 the resolution of the best member's finish at (d, K):
        1e-10 after the interior-point solve (members within 1e-10 of their local optimum; the best
        candidates get it where not every member does), 1e-4 after the log-sum-exp anneal alone,
        which leaves members 1e-6..2e-4 below theirs, so that a smaller gain is the finish refining
        the same code, not a new one."""
        return self.restart_gain or (1e-10 if self.newton_steps_for(d, K) else 1e-4)

    def population_for(self, d: int, K: int) -> int:
        """``population``, or where it is 0 the device's default (:func:`default_population`) divided
        among the ``stack`` pairs searched at once (8 at least)."""
        return self.population or max(8, default_population(d, K) // self.stack)

    def padded(self, K: int) -> int:
        """The points a pair of K is padded to in a stack: K alone, else the size bucket of K (8, 12,
        16, 24, 32, 48, ...: :func:`gnc_jax._src.runner.bucket_size`), so many pairs share one
        program (K = 97..128 share 128 points) and each pair's padding depends on K alone."""
        return K if self.stack == 1 else bucket_size(K, 8)

    def budget(self, d: int, K: int) -> float:
        """The work budget of one pair, in member-steps: population x ``work_per_member`` x sqrt(K)."""
        return self.population_for(d, K) * self.work_per_member * K**0.5

    def round_cost(self, d: int, K: int) -> float:
        """Member-steps of one member's search round (relaxation, finish, interior-point solve)."""
        members, steps = self.exact_plan(d, K)
        newton = newton_step_cost(d, K) * steps * members / self.population_for(d, K)
        return self.finish_cost(d, K) + (0 if self.exact_for(d, K) else self.relax_steps) + newton

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


class SearchStats(NamedTuple):
    """How a global search ended, as a :class:`gnc_jax.Solution` reports it (``Solution.search``).

    Attributes:
      stopped_by: 'optimum', 'work', 'rounds', 'patience', 'time_limit' or 'interrupt'
        (:attr:`SearchResult.stopped_by`).
      rounds: rounds run.
      restarts: populations drawn after the first (the episodes, less one).
      work: member-steps spent (:func:`newton_step_cost`), the same count on any machine.
      budget: the work budget, member-steps (:meth:`SearchSettings.budget`).
    """

    stopped_by: str
    rounds: int
    restarts: int
    work: float
    budget: float

    def summary(self) -> dict:
        """The fields with ``search_`` before their names (a solution's JSON row).

        >>> SearchStats("work", 15, 1, 9.5e7, 1e8).summary()["search_stopped_by"]
        'work'
        """
        return {f"search_{k}": v for k, v in self._asdict().items()}


class SearchResult(NamedTuple):
    """Best configuration found by :func:`search_tammes` and how the search went."""

    W: np.ndarray  # (d, K) float64, unit columns: the best configuration found (not polished)
    min_chord: float  # its exact minimum chord
    rounds: int  # rounds run
    elapsed_s: float  # wall time, compilation included
    interrupted: bool  # stopped by Ctrl-C (the result is the best so far)
    stopped_by: str  # 'optimum', 'work', 'rounds', 'patience', 'time_limit' or 'interrupt'
    hits: int  # members of the last population within 1e-9 (relative) of the result's chord
    restarts: int  # populations drawn after the first
    history: tuple  # (round, elapsed_s, best min angle in degrees) after every gain and every round
    recent_gain: float  # relative gain of the best chord over the last ``patience`` rounds (nan: none run)
    work: float = 0.0  # member-steps spent (:func:`newton_step_cost`)
    yields: tuple = ()  # (source, members contributed, members at the episodes' ends) per source
    budget: float = 0.0  # the work budget, member-steps (:meth:`SearchSettings.budget`)

    @property
    def stats(self) -> SearchStats:
        return SearchStats(self.stopped_by, self.rounds, self.restarts, self.work, self.budget)

    @property
    def status(self) -> Status:
        """``optimal`` when it stopped at a proven optimum (:func:`reached_proven_optimum`),
        ``stalled`` when the patience stopped it (no gain above 1e-10, relative, in ``patience``
        rounds), else ``max_steps`` (its budget, round cap, ``time_limit`` or Ctrl-C ended it)."""
        if self.stopped_by == "optimum":
            return Status.OPTIMAL
        return Status.STALLED if self.stopped_by == "patience" else Status.MAX_STEPS

    @property
    def note(self) -> str:
        """Why the search stopped, where a budget the caller set cut it short ('' otherwise)."""
        if self.stopped_by in ("time_limit", "interrupt"):
            return f"search stopped by {self.stopped_by} after {self.rounds} rounds"
        return ""


def reached_proven_optimum(d: int, K: int, chord: float) -> bool:
    """Whether a minimum chord attains the proven optimum of (d, K) where one is known in closed form
    (:func:`gnc_jax._src.theory.tammes_closed_form`): its max cosine 1 - chord^2 / 2 within
    :data:`~gnc_jax._src.status.OPTIMAL_GAP` of it, the tolerance at which a solution's status is
    ``optimal``. No search can do better there, so the search stops.

    >>> reached_proven_optimum(3, 6, 2**0.5), reached_proven_optimum(3, 6, 1.4)
    (True, False)
    """
    best = tammes_closed_form(d, K)
    return best is not None and 1 - chord**2 / 2 - best <= OPTIMAL_GAP


def angle_deg(chord: float) -> float:
    """The angle 2 asin(chord / 2) in degrees (the convention of :mod:`gnc_jax._src.geometry`)."""
    return float(np.degrees(2 * np.arcsin(min(chord / 2, 1.0))))


def _chords2(X, col):
    """Squared chords ||w_i - w_j||^2, with 4 added on the diagonal and on the pairs with a padded
    point (not in ``col``), so that neither is ever the minimum."""
    masked = ~(col[:, None] & col[None, :]) | jnp.eye(X.shape[1], dtype=bool)
    return 2.0 - 2.0 * (X.T @ X) + 4.0 * masked


def _min_chord(X, col):
    return jnp.sqrt(jnp.maximum(jnp.min(_chords2(X, col)), 0.0))


# The rim of a rotated cap moves by this many spacing angles (uniform, either sense):
# about one place along the rim, so that the contacts across it change (docs/results.md).
ROTATION_SHIFT = (0.7, 1.5)


def spacing_angle(d: int, K):
    """The angle of the cap that each of K points of S^{d-1} would have alone, (|S^{d-1}| / K)^{1/(d-1)}
    (sqrt(4 pi / K) on S^2): the scale of a code's spacing, which a cap rotation's rim moves by.

    >>> round(float(spacing_angle(3, 4 * np.pi)), 12), round(float(spacing_angle(4, 2 * np.pi**2)), 12)
    (1.0, 1.0)
    """
    area = 2 * np.pi ** (d / 2) / math.gamma(d / 2)  # 4 pi at d = 3 to the last bit
    return (area / K) ** (1.0 / (d - 1))


def rotate_cap(key: jax.Array, X: jax.Array, col: jax.Array) -> jax.Array:
    """A collective move: rotate the cap of the n points nearest a random point c of the code
    (n uniform in 4..max(5, K // 4)) about c (in a random plane orthogonal to c; on S^2 about the
    axis c), by the angle that moves the cap's rim by u spacing angles (:func:`spacing_angle`; u
    uniform in :data:`ROTATION_SHIFT`, either sense; the sine of the cap's radius taken as at least
    0.3). The chords inside the cap and outside it are kept; those across its rim change.

    Args:
      key: a ``jax.random`` key.
      X: (d, K_max) unit columns, d >= 3.
      col: (K_max,) bool, the real points (the others stay put).

    Returns:
      The moved configuration (d, K_max).
    """
    d = X.shape[0]
    K = jnp.sum(col)
    k_c, k_n, k_u, k_sign, k_plane = jax.random.split(key, 5)
    c = X[:, jax.random.randint(k_c, (), 0, K)]
    cos = jnp.where(col, c @ X, -2.0)
    n = jax.random.randint(k_n, (), 4, jnp.maximum(5, K // 4) + 1)
    edge = -jnp.sort(-cos)[n - 1]  # the cosine of the cap's radius
    radius = jnp.arccos(jnp.clip(edge, -1.0, 1.0))
    u = jax.random.uniform(k_u, (), X.dtype, *ROTATION_SHIFT)
    u = u * jnp.where(jax.random.uniform(k_sign) < 0.5, -1, 1)
    phi = u * spacing_angle(d, K) / jnp.maximum(jnp.sin(radius), 0.3)
    P = jax.random.normal(k_plane, (d, 2), X.dtype)
    q, _ = jnp.linalg.qr(P - c[:, None] * (c @ P)[None, :])  # the plane of the rotation
    a, b = q[:, 0] @ X, q[:, 1] @ X
    Y = X + (jnp.cos(phi) - 1) * (q[:, :1] * a + q[:, 1:] * b) + jnp.sin(phi) * (q[:, 1:] * a - q[:, :1] * b)
    return jnp.where(col & (cos >= edge), normalize_columns(Y), X)


RIESZ_EXPONENTS = (2.0, 6.0, 12.0, 24.0, 48.0, 96.0)


def _log_riesz_energy(X, s, col):
    """(1 / s) log sum_{i != j} ||w_i - w_j||^{-s} over the real points: the Riesz s-energy on a
    log scale (finite in float64 at any s; the same minimisers)."""
    off = ~jnp.eye(X.shape[1], dtype=bool) & col[:, None] & col[None, :]
    c2 = jnp.where(off, jnp.maximum(_chords2(X, col), 1e-300), 1.0)
    return jax.nn.logsumexp(jnp.where(off, -0.5 * s * jnp.log(c2), -jnp.inf)) / s


def _energy_schedule(steps: int):
    """Riesz exponents and Adam step sizes of the energy continuation: ``steps`` per exponent at
    0.01, twice as many at the last at 0.002."""
    n = [steps] * (len(RIESZ_EXPONENTS) - 1) + [2 * steps]
    exponents = jnp.concatenate([jnp.full(k, e) for k, e in zip(n, RIESZ_EXPONENTS)])
    rates = jnp.concatenate([jnp.full(k, 0.01 if i < len(n) - 1 else 0.002) for i, k in enumerate(n)])
    return exponents, rates


@functools.cache
def _programs(d: int, K_max: int, s: SearchSettings):
    """The jitted population draw, search round and energy continuation of pairs (d, K <= K_max)
    (cached per settings; ``s.population`` is set). Every program takes ``col`` (K_max,) bool, the
    pair's real points (its first K columns); the round takes the stacked slots (S, R, d, K_max) of
    S pairs with their ``col`` (S, K_max) and whether each slot is ``active`` (the others are kept).
    With ``s.stack = 1`` every pair has K_max points (the compiler folds what is then constant)."""
    # Long because each compiled program is a closure over the pair's static shapes and settings.
    masked = s.stack > 1
    R, M = s.population, s.holes_per_point * K_max
    max_moves = s.moves_for(K_max)  # the move loop's length; a pair of K moves up to moves_for(K)
    init_temps = geometric(0.1, 1e-9, s.init_steps)
    seed_temps = geometric(1e-3, 1e-9, s.init_steps)
    finish_temps = geometric(1e-3, 1e-9, s.finish_steps)
    long_temps = geometric(1e-3, 1e-9, s.long_finish_steps or 1)
    half = R // 2 if s.long_finish_steps else 0  # the last ``half`` members finish with ``long_temps``

    exponents, energy_rates = _energy_schedule(s.energy_steps)

    def anneal(X, temps, col):
        offsets = TAMMES.smoothing_offsets(col)
        value_and_grad = lambda p, t: TAMMES.value_and_grad(p, offsets, t)
        opt = riemannian_adam({"W": col})
        return run_schedule(value_and_grad, {"W": X}, opt, retract, temps, 0.5 * temps).params["W"]

    solved, newton_steps = s.exact_plan(d, K_max)
    exact = s.exact_for(d, K_max)  # every member; else the best ``solved`` candidates (where > 0)
    chords = jax.vmap(_min_chord, (0, None))

    def solve(X, col):
        """The interior-point solve to the local optimum near X, or X where that is better."""
        Y = interior_point(X, newton_steps, col=col if masked else None)
        return jnp.where(_min_chord(Y, col) > _min_chord(X, col), Y, X)

    def finish(X, temps, col):
        """The anneal, then (where ``exact``) the interior-point solve."""
        X = anneal(X, temps, col)
        return solve(X, col) if exact else X

    def solve_best(Y, cy, col):
        """Where not every member is solved, the interior-point solve of the best ``solved`` of the
        candidates Y (their exact minimum chords cy)."""
        if exact or not newton_steps:
            return Y, cy
        top = jnp.argsort(-cy)[:solved]
        Z = jax.vmap(solve, (0, None))(Y[top], col)
        return Y.at[top].set(Z), cy.at[top].set(chords(Z, col))

    def energy(X, col):
        energy_and_grad = lambda p, e: jax.value_and_grad(lambda p: _log_riesz_energy(p["W"], e, col))(p)
        opt = riemannian_adam({"W": col}, eps=1e-8)
        X = run_schedule(energy_and_grad, {"W": X}, opt, retract, exponents, energy_rates).params["W"]
        return anneal(X, finish_temps, col)

    def penalty(X, delta, col):
        return jnp.sum(jax.nn.relu(delta**2 - _chords2(X, col)) ** 2) / delta**4

    def relax(X, delta, col):
        penalty_and_grad = lambda p, t: jax.value_and_grad(lambda p: penalty(p["W"], delta, col))(p)
        rates = 0.02 * delta * jnp.linspace(1.0, 0.05, s.relax_steps)
        opt = riemannian_adam({"W": col}, eps=1e-8)
        state = run_schedule(penalty_and_grad, {"W": X}, opt, retract, jnp.zeros_like(rates), rates)
        return state.params["W"]

    def relocate(key, X, i, col):
        """Point i to the largest hole of the others (best of M random candidates)."""
        C = normalize_columns(jax.random.normal(key, (d, M), X.dtype))
        others = (jnp.arange(K_max) != i) & col
        cos = jnp.where(others[None, :], C.T @ X, -2.0)
        return X.at[:, i].set(C[:, jnp.argmin(jnp.max(cos, axis=1))])

    def move(key, X, col):
        K = jnp.sum(col)
        spacing = K ** (-1.0 / (d - 1))
        moves = s.max_moves or jnp.maximum(6, K // 8)  # :meth:`SearchSettings.moves_for` of the pair
        k_m, k_loop = jax.random.split(key)
        m = jax.random.randint(k_m, (), 1, moves + 1)

        def body(j, carry):
            X, key = carry
            key, k_tight, k_rand, k_pick, k_hole = jax.random.split(key, 5)
            nearest = jnp.min(_chords2(X, col), axis=1)
            logits = jnp.where(col, -(nearest - jnp.min(nearest)) / (1e-3 * spacing**2), -jnp.inf)
            tight = jax.random.categorical(k_tight, logits)
            i = jnp.where(jax.random.uniform(k_pick) < 0.5, tight, jax.random.randint(k_rand, (), 0, K))
            return jnp.where(j < m, relocate(k_hole, X, i, col), X), key

        X, _ = jax.lax.fori_loop(0, max_moves, body, (X, k_loop))
        return X

    def any_move(key, X, col):
        if not s.rotate_share:
            return move(key, X, col)
        k_which, k = jax.random.split(key)
        return jax.lax.cond(jax.random.uniform(k_which) < s.rotate_share, rotate_cap, move, k, X, col)

    def candidate(key, X, c, temps, col):
        k_move, k_growth = jax.random.split(key)
        Y = any_move(k_move, X, col)
        if s.relax_steps and not exact:
            Y = relax(Y, c * (1.0 + jax.random.uniform(k_growth, (), X.dtype, 0.0, s.growth)), col)
        return finish(Y, temps, col)

    def draw(key, proposals, proposed, given, col):
        """A new population: random members annealed from t = 0.1; proposals finished from t = 1e-3,
        and kept as they are where that is not better (``given``: the caller's seeds, kept as they are)."""
        X = normalize_columns(jax.random.normal(key, (R, d, K_max), jnp.float64))
        X = jnp.where(proposed[:, None, None] & col, proposals, X)  # padded points stay random
        temps = jnp.where(proposed[:, None], seed_temps, init_temps)
        Y = jax.vmap(finish, (0, 0, None))(X, temps, col)
        cX = chords(X, col)
        Y, cY = solve_best(Y, chords(Y, col), col)
        keep = proposed & (given | (cX >= cY))
        return jnp.where(keep[:, None, None], X, Y), jnp.where(keep, cX, cY)

    def slot_round(key, X, c, col):
        """One pair's round: every member moves and finishes and is kept where its exact minimum
        chord improves, then the best eighth replaces the worst."""
        keys, n = jax.random.split(key, R), R - half
        one = lambda temps: jax.vmap(lambda k, x, c: candidate(k, x, c, temps, col))
        Y = one(finish_temps)(keys[:n], X[:n], c[:n])
        if half:
            Y = jnp.concatenate([Y, one(long_temps)(keys[n:], X[n:], c[n:])])
        Y, cy = solve_best(Y, chords(Y, col), col)
        better = cy > c
        X, c = jnp.where(better[:, None, None], Y, X), jnp.where(better, cy, c)
        q = max(1, R // 8)
        order = jnp.argsort(-c)
        src = jnp.arange(R).at[order[R - q :]].set(order[:q])
        return X[src], c[src], src

    @jax.jit
    def search_round(keys, X, c, col, active):
        if X.shape[0] == 1:  # one pair: the same program as without the slot axis
            out = slot_round(keys[0], X[0], c[0], col[0])
            new = tuple(v[None] for v in out)
        else:
            new = jax.vmap(slot_round)(keys, X, c, col)
        keep = lambda a, b: jnp.where(active.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)
        return keep(new[0], X), keep(new[1], c), new[2]

    def energy_draw(key, col):
        X = normalize_columns(jax.random.normal(key, (R, d, K_max), jnp.float64))
        return jax.vmap(energy, (0, None))(X, col)

    # The interior-point solve factors a batch of matrices by LAPACK: one such program at a time.
    exclusive = one_at_a_time if newton_steps else lambda program: program

    def compiled(f):
        program = jax.jit(f)
        return CompiledAhead(program, exclusive(program))

    return _Compiled(
        compiled(draw),
        CompiledAhead(search_round, exclusive(search_round)),
        CompiledAhead(jax.jit(energy_draw)),
        compiled(over_slots(draw)),
        CompiledAhead(jax.jit(over_slots(energy_draw))),
    )


class _Compiled(NamedTuple):
    """The programs of pairs (d, K <= K_max) (:func:`_programs`); ``draws`` and ``energy_draws`` are
    ``draw`` and ``energy_draw`` over the slots of a stack (:func:`gnc_jax._src.runner.over_slots`),
    for the pairs that draw their populations at once."""

    draw: CompiledAhead
    search_round: CompiledAhead
    energy_draw: CompiledAhead
    draws: CompiledAhead
    energy_draws: CompiledAhead


def _energy_program(d: int, K_max: int, s: SearchSettings, batched: bool = False) -> CompiledAhead:
    """The energy continuation of ``energy_members`` starts for pairs padded to K_max (``batched``:
    over a leading axis of pairs)."""
    programs = _programs(d, K_max, s.replace(population=s.energy_members))
    return programs.energy_draws if batched else programs.energy_draw


def _energy_codes(d: int, K: int, K_max: int, key: jax.Array, s: SearchSettings) -> np.ndarray:
    """:func:`energy_codes` run by the programs of pairs padded to K_max."""
    if not s.energy_members:
        return np.zeros((0, d, K))
    return np.asarray(_energy_program(d, K_max, s)(key, jnp.arange(K_max) < K))[:, :, :K]


@float64
def energy_codes(d: int, K: int, key: jax.Array, settings: SearchSettings | None = None) -> np.ndarray:
    """The configurations (n, d, K) that energy continuation finds from ``energy_members`` random
    starts drawn with ``key``: minimise the Riesz s-energy sum_{i<j} ||w_i - w_j||^{-s} (on a log
    scale) for s = 2, 6, ..., 96 in turn, then the search's finish."""
    return _energy_codes(d, K, K, key, settings or SearchSettings())


def _check_seeds(seeds, d: int, K: int) -> list[np.ndarray]:
    """The given configurations, validated and normalised."""
    out = [validate_configuration(W, "seeds") for W in seeds]
    for A in out:
        if A.shape != (d, K):
            raise InvalidArgument(f"seeds must be ({d}, {K}) configurations, got shape {A.shape}")
    return out


class _Sources:
    """The proposal sources of new populations and their yield (module docstring)."""

    def __init__(self, d: int, K: int, s: SearchSettings, K_max: int | None = None):
        self.d, self.K, self.s, self.K_max = d, K, s, K_max or K
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

    def source_work(self, name: str) -> float:
        """The work of one draw of a symmetric or energy source (whatever its share): the energy
        continuation's steps, or a symmetric start's steps of a / K each per decomposition."""
        s = self.s
        if name == "energy":
            return s.energy_members * (len(RIESZ_EXPONENTS) + 1) * s.energy_steps
        steps = self.symmetric_steps
        return sum(s.symmetric_starts * steps * a / self.K for a, _ in decompositions(name, self.K))

    @property
    def symmetric_steps(self) -> int:
        """The anneal steps of a symmetric start: half a random member's."""
        return self.s.init_steps // 2

    def draw_work(self, n: int) -> float:
        """The work :meth:`draw` spends on proposals for n members, known before it runs."""
        shares = zip(self.names, self.shares(n))
        return sum(self.source_work(name) for name, count in shares if count and name != "random")

    def asked(self, n: int) -> list[tuple[int, str, int]]:
        """The symmetric and energy sources with members among n: (index, name, members)."""
        counts = zip(self.names, self.shares(n))
        return [(i, name, int(c)) for i, (name, c) in enumerate(counts) if c and name != "random"]

    def collect(self, n: int, found: list[list[np.ndarray]]):
        """The proposals of the sources :meth:`asked` (``found``: what each found, in that order),
        best first and as many as its members each, their origins and their work."""
        proposals, origin = [], []
        for (i, _, count), pool in zip(self.asked(n), found):
            best = sorted(pool, key=tammes_margin, reverse=True)[:count]
            proposals += best
            origin += [i] * len(best)
        origin += [0] * (n - len(origin))  # random members fill the rest
        return proposals, np.array(origin), self.draw_work(n)

    def after_episode(self, origin: np.ndarray, drawn: np.ndarray) -> _Sources:
        """The sources once an episode ends (a copy): the members each contributed, and those of its
        lineage now."""
        out = copy.copy(self)
        out.pulls = self.pulls + np.bincount(drawn[drawn >= 0], minlength=len(self.names))
        out.wins = self.wins + np.bincount(origin[origin >= 0], minlength=len(self.names))
        return out

    def yields(self) -> tuple:
        return tuple((n, int(p), int(w)) for n, p, w in zip(self.names, self.pulls, self.wins))


def _draw_proposals(asks, slots: int) -> list[tuple]:
    """Proposals for new populations of up to ``slots`` pairs of one stack at once, ``asks`` =
    [(sources, n members, key)]; per pair (proposals, origins, work) (:meth:`_Sources.collect`; the
    caller draws the random members). In a stack (``stack > 1``) each source runs once for all of
    them over ``slots`` blocks (the missing ones copies of the last, left out after: what a pair gets
    depends on neither the others nor how many there are): the energy continuation over an axis of
    pairs, a group's symmetric starts in one padded program
    (:func:`gnc_jax._src.symmetric.padded_symmetric_starts`). Alone, each source runs for the pair."""
    first = asks[0][0]
    s, d, K_max, masked = first.s, first.d, first.K_max, first.s.stack > 1
    jobs = [
        (p, src.K, name, c, jax.random.fold_in(key, i))
        for p, (src, n, key) in enumerate(asks)
        for i, name, c in src.asked(n)
    ]
    found = {}
    energy = [(p, K, key) for p, K, name, _, key in jobs if name == "energy"]
    if energy and masked:
        blocks = energy + [energy[-1]] * (slots - len(energy))
        active = np.arange(slots) < len(energy)
        cols = np.arange(K_max) < np.array([K for _, K, _ in blocks])[:, None]
        keys = jnp.stack([key for *_, key in blocks])
        codes = _energy_program(d, K_max, s, batched=True)(active, keys, cols)
        found |= {(p, "energy"): np.asarray(codes[j])[:, :, :K] for j, (p, K, _) in enumerate(energy)}
    else:
        found |= {(p, "energy"): _energy_codes(d, K, K_max, key, s) for p, K, key in energy}
    steps = first.symmetric_steps
    for group in GROUPS:
        asked = [(p, K, c, key) for p, K, name, c, key in jobs if name == group]
        if masked and asked:
            requests = [(K, key, c) for _, K, c, key in asked]
            starts = padded_symmetric_starts(group, requests, s.symmetric_starts, steps, K_max, slots)
        else:
            starts = [
                symmetric_starts(K, key, s.symmetric_starts, steps, (group,), c) for _, K, c, key in asked
            ]
        found |= {(p, group): [A for best in st for A in best] for (p, *_), st in zip(asked, starts)}
    return [
        src.collect(n, [found[p, name] for _, name, _ in src.asked(n)]) for p, (src, n, _) in enumerate(asks)
    ]


def _compile_proposals(sources: list, n: int, key, slots: int) -> None:
    """Start compiling the symmetric and energy programs that :func:`_draw_proposals` runs for
    these pairs' populations of n members drawn at once (``key``: the shape of a pair's key)."""
    first = sources[0]
    s, d, K_max, steps = first.s, first.d, first.K_max, first.symmetric_steps
    used = {name for src in sources for _, name, _ in src.asked(n)}
    spec = jax.ShapeDtypeStruct
    if s.stack == 1:
        for src in sources:
            compile_symmetric_starts(src.K, s.symmetric_starts, steps, [g for g in GROUPS if g in used])
        if "energy" in used:
            _energy_program(d, K_max, s).start(key, spec((K_max,), jnp.bool_))
        return
    for group in GROUPS:
        if group in used:
            compile_padded_starts(group, K_max, s.symmetric_starts, steps, slots)
    if "energy" in used:
        program = _energy_program(d, K_max, s, batched=True)
        flag = jnp.bool_
        program.start(spec((slots,), flag), spec((slots, *key.shape), key.dtype), spec((slots, K_max), flag))


class _Pair:
    """One pair's search on the host: its sources, population, budget, best so far and history. Its
    populations are drawn by :func:`_draw_populations` (with those of the pairs that need one at the
    same time); its rounds run in a slot of :func:`search_stack`."""

    def __init__(self, d, K, K_max, key, s: SearchSettings, seeds, time_limit, progress):
        self.d, self.K, self.s, self.time_limit, self.progress = d, K, s, time_limit, progress
        self.t0 = time.perf_counter()
        self.given = _check_seeds(seeds, d, K)
        self.col = jnp.arange(K_max) < K
        self.budget, self.round_work = s.budget(d, K), s.population * s.round_cost(d, K)
        self.programs = _programs(d, K_max, s)
        self.k_draw, self.k_rounds, self.k_sources = jax.random.split(key, 3)
        self.sources = _Sources(d, K, s, K_max)
        self.best_W, self.best, self.spent = None, -1.0, 0.0
        self.history, self.best_after = [], []  # best_after[r]: the best chord after round r
        self.rounds, self.restarts, self.last_gain, self.episode_gain, self.stopped_by = 0, 0, 0, 0, None

    def begin_episode(self, X, c, origin, work) -> None:
        """A new population (:func:`_draw_populations`), its origins and the work it took."""
        self.X, self.c, self.origin, self.drawn = X, c, origin, origin.copy()
        self.spent, self.episode_gain = self.spent + work, self.rounds
        self.take_best()
        if self.best_after:
            self.best_after[-1] = self.best
        else:
            self.best_after.append(self.best)

    def take_best(self) -> None:
        """The population's best member becomes the result if its exact chord is larger; a relative
        gain above 1e-10 resets the patience, one above ``restart_gain`` the episode's count too."""
        W = np.asarray(self.X[int(np.argmax(np.asarray(self.c)))], np.float64)[:, : self.K]
        chord, before = tammes_margin(W), self.best
        if chord > self.best:
            self.best_W, self.best = W, chord
        if chord > before * (1 + 1e-10):
            self.last_gain = self.rounds
        if chord > before * (1 + self.s.restart_gain_for(self.d, self.K)):
            self.episode_gain = self.rounds

    def report(self):
        self.history.append((self.rounds, time.perf_counter() - self.t0, angle_deg(self.best)))
        if self.progress is not None:
            elapsed = self.history[-1][1]
            eta = elapsed / self.spent * max(self.budget - self.spent, 0.0)  # patience may stop it sooner
            if self.time_limit is not None:
                eta = min(eta, max(self.time_limit - elapsed, 0.0))
            print(
                f"search tammes d={self.d} K={self.K}: best {angle_deg(self.best):.9f} deg after round "
                f"{self.rounds} ({self.restarts} restarts, {self.spent / self.budget:.0%} of the budget), "
                f"{elapsed:.1f} s, ETA <= {eta:.0f} s",
                file=self.progress,
                flush=True,
            )

    def ready(self) -> bool:
        """Whether the pair runs another round; if not, why it stopped is recorded."""
        if self.stopped_by is None:
            if reached_proven_optimum(self.d, self.K, self.best):
                self.stopped_by = "optimum"
            elif self.rounds >= self.s.rounds:
                self.stopped_by = "rounds"
            elif self.spent + self.round_work > self.budget:
                self.stopped_by = "work"
            elif self.time_limit is not None and time.perf_counter() - self.t0 >= self.time_limit:
                self.stopped_by = "time_limit"
        return self.stopped_by is None

    def after_round(self, X, c, src) -> bool:
        """The population after a round: the best so far, the patience; whether a new episode begins
        (its population is then drawn by :func:`_draw_populations`)."""
        s, R, d, K = self.s, self.s.population, self.d, self.K
        self.X, self.c = X, c
        self.origin, self.spent, self.rounds = (
            self.origin[np.asarray(src)],
            self.spent + self.round_work,
            self.rounds + 1,
        )
        self.take_best()
        self.best_after.append(self.best)
        self.report()
        if self.rounds - self.last_gain >= s.patience:
            self.stopped_by = "patience"
            return False
        if not s.restart_after or self.rounds - self.episode_gain < s.restart_after:
            return False
        sources = self.sources.after_episode(self.origin, self.drawn)
        draw = R * s.draw_cost(d, K) + sources.draw_work(R)
        if self.spent + draw + self.round_work <= self.budget:  # a new population and a round fit
            self.sources = sources
            self.restarts += 1
            return True
        return False

    def result(self) -> SearchResult:
        self.sources = self.sources.after_episode(self.origin, self.drawn)
        p, after = self.s.patience, self.best_after
        since = after[max(0, len(after) - 1 - p)]
        recent_gain = (after[-1] - since) / since if len(after) > 1 else float("nan")
        try:
            # The history ends at the result (a new population drawn after the last round's line
            # may have raised it).
            if not self.history or self.history[-1][2] != angle_deg(self.best):
                self.report()
        except KeyboardInterrupt:  # while the line was written: the result stands
            self.stopped_by = "interrupt"
        return SearchResult(
            W=np.asarray(self.best_W, np.float64),
            min_chord=self.best,
            rounds=self.rounds,
            elapsed_s=time.perf_counter() - self.t0,
            interrupted=self.stopped_by == "interrupt",
            stopped_by=self.stopped_by,
            hits=int(np.sum(np.asarray(self.c) >= self.best * (1 - 1e-9))),
            restarts=self.restarts,
            history=tuple(self.history),
            recent_gain=recent_gain,
            work=self.spent,
            yields=self.sources.yields(),
            budget=self.budget,
        )


def _draw_populations(items, slots: int) -> list[tuple]:
    """New populations of up to ``slots`` pairs of one stack at once, ``items`` = [(pair, given
    configurations)]: per pair (X, c, origin, work) for :meth:`_Pair.begin_episode`. The proposals
    come from :func:`_draw_proposals`; in a stack the draw runs over ``slots`` pairs (the missing ones
    copies of the last, left out after), alone the pair's own program."""
    first = items[0][0]
    s, d, R, K_max = first.s, first.d, first.s.population, first.col.shape[0]
    asks = [(p.sources, R - min(len(g), R), jax.random.fold_in(p.k_sources, p.restarts)) for p, g in items]
    args, out = [], []
    for (pair, given), (proposals, origin, work) in zip(items, _draw_proposals(asks, slots)):
        chosen = (given + proposals)[:R]
        padded = np.zeros((R, d, K_max))
        for i, A in enumerate(chosen):
            padded[i, :, : pair.K] = A
        key = jax.random.fold_in(pair.k_draw, pair.restarts)
        args.append((key, padded, np.arange(R) < len(chosen), np.arange(R) < len(given), pair.col))
        origin = np.concatenate([np.full(min(len(given), R), -1), origin])[:R]
        out.append((origin, work + R * s.draw_cost(d, pair.K)))
    if s.stack == 1:
        X, c = first.programs.draw(*args[0])
        return [(X, c, *out[0])]
    active = np.arange(slots) < len(args)
    args += [args[-1]] * (slots - len(args))
    X, c = first.programs.draws(active, *(jnp.stack(a) for a in zip(*args)))
    return [(X[j], c[j], *o) for j, o in enumerate(out)]


def _stack_plan(d: int, Ks: list[int], settings: SearchSettings | None):
    """The settings of a stack of pairs (population set), the points each pair is padded to, and the
    number of slots."""
    s = settings or SearchSettings()
    K_max = s.padded(max(Ks))
    s = s.replace(population=s.population_for(d, K_max))
    return s, (lambda K: K_max) if s.stack > 1 else (lambda K: K), min(s.stack, len(Ks))


def _compile_pairs(d: int, Ks: list[int], key: jax.Array, s: SearchSettings, K_max: int, slots: int) -> None:
    """Start compiling the programs that the first populations of pairs entering a stack at once
    call (:class:`CompiledAhead`), in the order they call them: the symmetric starts, the energy
    continuation, the draw; then the round (``key``: one of their keys)."""
    R, f64, flag, spec = s.population, jnp.float64, jnp.bool_, jax.ShapeDtypeStruct
    key = jax.eval_shape(lambda k: jax.random.fold_in(k, 0), key)
    _compile_proposals([_Sources(d, K, s, K_max) for K in Ks], R, key, slots)
    programs = _programs(d, K_max, s)
    draw = (key, spec((R, d, K_max), f64), spec((R,), flag), spec((R,), flag), spec((K_max,), flag))
    if s.stack == 1:
        programs.draw.start(*draw)
    else:
        programs.draws.start(spec((slots,), flag), *(spec((slots, *a.shape), a.dtype) for a in draw))
    programs.search_round.start(
        spec((slots, *key.shape), key.dtype),
        spec((slots, R, d, K_max), f64),
        spec((slots, R), f64),
        spec((slots, K_max), flag),
        spec((slots,), flag),
    )


@float64
def compile_ahead(d: int, Ks, keys, settings: SearchSettings | None = None) -> None:
    """Start compiling, on a background thread, the programs of the first pairs that
    :func:`search_stack` with these arguments runs (those of its first slots), so that they compile
    while the caller does other work (:class:`gnc_jax._src.process.CompiledAhead`)."""
    Ks = [int(K) for K in Ks]
    s, padded, slots = _stack_plan(d, Ks, settings)
    _compile_pairs(d, Ks[:slots], keys[0], s, padded(Ks[0]), slots)


@float64
def search_stack(
    d: int,
    Ks,
    keys,
    settings: SearchSettings | None = None,
    seeds=None,
    time_limit: float | None = None,
    progress=None,
) -> list[SearchResult]:
    """The iterated hole search (module docstring) for pairs (d, K) of one dimension, ``stack`` at a
    time in one compiled round.

    Each pair is padded to K_max = :meth:`SearchSettings.padded` of the largest K (masked: padded
    points are in no chord, move, energy or constraint); the populations of ``stack`` pairs form the
    slots of one round, and a pair that ends makes room for the next. The pairs that need a new
    population after the same round (or enter together) draw it in programs over the slots
    (:func:`_draw_populations`). Each pair keeps its own key, sources, budget and stopping rules, and
    every program runs at the shapes of all the slots, so its result depends on the key, the pair, the
    settings, K_max and the number of slots, not on the other pairs. With ``stack = 1`` and one pair
    this is :func:`search_tammes`.

    Args:
      d: the dimension (>= 2).
      Ks: the pairs' numbers of points (>= 2 each).
      keys: one ``jax.random`` key per pair.
      settings: :class:`SearchSettings` (defaults if None).
      seeds: per pair, configurations (d, K) that join its first population (None: none).
      time_limit: seconds per pair, from when it enters a slot (the slots share the wall clock).
      progress: a text stream for one line per pair and round, or None.

    Returns:
      One `SearchResult` per pair, in order. Ctrl-C stops the pairs in the slots with their best so
      far; the pairs waiting then run.
    """
    # Long because the slot loop, its refill and its Ctrl-C handling act on the same slots.
    Ks = [int(K) for K in Ks]
    seeds = list(seeds) if seeds is not None else [()] * len(Ks)
    if len(keys) != len(Ks) or len(seeds) != len(Ks):
        raise InvalidArgument(
            f"keys and seeds need one entry per pair ({len(Ks)}), got {len(keys)}, {len(seeds)}"
        )
    time_limit = time_limit_seconds(time_limit)
    s, padded, slots = _stack_plan(d, Ks, settings)
    compile_ahead(d, Ks, keys, settings)
    pending, live = list(range(len(Ks)))[::-1], {}  # live: slot -> (pair index, _Pair)
    results: list = [None] * len(Ks)
    while pending or live:
        try:
            entering = [slot for slot in range(slots) if slot not in live][: len(pending)]
            for slot in entering:
                j = pending.pop()
                live[slot] = (j, _Pair(d, Ks[j], padded(Ks[j]), keys[j], s, seeds[j], time_limit, progress))
            if entering:
                if pending:  # the next pair's programs compile while these run
                    _compile_pairs(d, [Ks[pending[-1]]], keys[pending[-1]], s, padded(Ks[pending[-1]]), slots)
                try:
                    drawn = _draw_populations(
                        [(live[slot][1], live[slot][1].given) for slot in entering], slots
                    )
                except KeyboardInterrupt:  # before their first populations: nothing to return
                    pending += [live.pop(slot)[0] for slot in reversed(entering)]
                    raise
                for slot, population in zip(entering, drawn):
                    live[slot][1].begin_episode(*population)
            for slot, (j, pair) in list(live.items()):
                if not pair.ready():
                    results[j] = pair.result()
                    del live[slot]
            if not live or (len(live) < slots and pending):
                continue
            fill = next(iter(live.values()))[1]
            members = [live[i][1] if i in live else fill for i in range(slots)]
            X, c, src = fill.programs.search_round(
                jnp.stack([jax.random.fold_in(p.k_rounds, p.rounds) for p in members]),
                jnp.stack([p.X for p in members]),
                jnp.stack([p.c for p in members]),
                jnp.stack([p.col for p in members]),
                jnp.asarray([i in live for i in range(slots)]),
            )
            restarting = [
                pair for slot, (_, pair) in live.items() if pair.after_round(X[slot], c[slot], src[slot])
            ]
            if restarting:
                for pair, population in zip(
                    restarting, _draw_populations([(p, []) for p in restarting], slots)
                ):
                    pair.begin_episode(*population)
        except KeyboardInterrupt:
            if not live:
                raise
            for _, pair in live.values():
                pair.stopped_by = "interrupt"
    return results


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
      settings: :class:`SearchSettings` (defaults if None; ``stack`` is not used).
      seeds: configurations (d, K) that join the first population as they are (cross-seeding: e.g.
        a softmax code of the same pair); the search never returns anything worse than the best.
      time_limit: seconds; rounds run until the budget, the round cap, the patience or this time is
        spent, whichever comes first, or until a proven optimum is reached
        (:func:`reached_proven_optimum`).
      progress: a text stream for one line per round (best angle so far, the budget spent, elapsed,
        an upper bound on the time left), or None.

    Returns:
      A `SearchResult`. Ctrl-C during the rounds stops the search and returns the best so far.
    """
    s = (settings or SearchSettings()).replace(stack=1)
    return search_stack(d, [K], [key], s, [seeds], time_limit, progress)[0]
