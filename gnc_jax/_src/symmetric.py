"""Symmetric starts for Tammes codes on S^2: unions of orbits of a rotation group.

Many best-known codes on S^2 are unions of orbits of a point group. A finite rotation group G
(cyclic C_n, dihedral D_n, tetrahedral T, octahedral O, icosahedral I) has generic orbits of |G|
points and special ones, the endpoints of its rotation axes: the 2 poles of C_n (two orbits of 1);
the 2 poles and two orbits of n points on the 2-fold axes of D_n; 6, 4 and 4 points for T; 6, 8 and
12 for O; the 12 vertices, 20 face centres and 30 edge midpoints of the icosahedron for I. For every
way of writing K = |G| a + the sizes of some special orbits, the configurations built from a free
representatives and those orbits have 2a degrees of freedom instead of 2K: :func:`symmetric_starts`
anneals the representatives (the search's log-sum-exp schedule over the pairs of a representative
with any point, which by the symmetry are all the pairs up to rotation: |G| times fewer terms than the
whole configuration's) from random starts and returns the best few distinct configurations of each
decomposition. They seed the search (:func:`gnc_jax._src.search.search_tammes`), which polishes
them without the symmetry: some best-known codes are reached only from such starts
(docs/decisions.md).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from gnc_jax._src.driver import geometric, retract, riemannian_adam, run_schedule
from gnc_jax._src.errors import InvalidArgument
from gnc_jax._src.process import CompiledAhead, float64
from gnc_jax._src.runner import over_slots
from gnc_jax._src.sphere import normalize_columns

_PHI = (1 + 5**0.5) / 2


def _rotation(axis, angle: float) -> np.ndarray:
    x, y, z = np.asarray(axis, float) / np.linalg.norm(axis)
    c, s = np.cos(angle), np.sin(angle)
    C = 1 - c
    return np.array(
        [
            [c + x * x * C, x * y * C - z * s, x * z * C + y * s],
            [y * x * C + z * s, c + y * y * C, y * z * C - x * s],
            [z * x * C - y * s, z * y * C + x * s, c + z * z * C],
        ]
    )


def _generators(name: str) -> list[np.ndarray]:
    """Generating rotations of the group called ``name``: C<n>, D<n> (n >= 2), T, O or I."""
    polyhedral = {
        "T": ([0, 0, 1], 2, [1, 1, 1], 3),
        "O": ([0, 0, 1], 4, [1, 1, 1], 3),
        "I": ([0, 1, _PHI], 5, [1, 1, 1], 3),  # a vertex and a face centre of the icosahedron
    }
    if name in polyhedral:
        a, p, b, q = polyhedral[name]
        return [_rotation(a, 2 * np.pi / p), _rotation(b, 2 * np.pi / q)]
    match = re.fullmatch(r"([CD])([1-9][0-9]*)", name)
    if not match or int(match[2]) < 2:
        raise InvalidArgument(f"symmetry group must be C<n> or D<n> (n >= 2), T, O or I, got {name!r}")
    gens = [_rotation([0, 0, 1], 2 * np.pi / int(match[2]))]
    return gens + [_rotation([1, 0, 0], np.pi)] if match[1] == "D" else gens


def _contains(points, p) -> bool:
    return any(np.allclose(p, q, atol=1e-9) for q in points)


@functools.cache
def rotation_group(name: str) -> np.ndarray:
    """The rotations (|G|, 3, 3) of the group called ``name`` (C<n>, D<n>, T, O, I): the closure of
    its generators."""
    gens = _generators(name)
    group, frontier = [np.eye(3)], [np.eye(3)]
    while frontier:
        new = [g @ h for g in frontier for h in gens]
        frontier = []
        for m in new:
            if not _contains(group, m):
                group.append(m)
                frontier.append(m)
    return np.array(group)


def _orbit(G: np.ndarray, v) -> np.ndarray:
    """The distinct images (n, 3) of the unit vector v under the rotations G."""
    out = []
    for p in G @ v:
        if not _contains(out, p):
            out.append(p)
    return np.array(out)


@functools.cache
def special_orbits(name: str) -> tuple[np.ndarray, ...]:
    """The orbits (n, 3) of the endpoints of the group's rotation axes, smallest first."""
    G = rotation_group(name)
    ends = []
    for g in G[1:]:
        w, V = np.linalg.eig(g)
        axis = np.real(V[:, np.argmin(np.abs(w - 1))])
        ends += [axis / np.linalg.norm(axis), -axis / np.linalg.norm(axis)]
    orbits = []
    for p in ends:
        if not any(_contains(o, p) for o in orbits):
            orbits.append(_orbit(G, p))
    return tuple(sorted(orbits, key=len))


def _fixed_points(name: str, chosen: tuple[int, ...]) -> np.ndarray:
    """The chosen special orbits of the group as one (3, n) configuration (n = 0 for none)."""
    return np.concatenate([special_orbits(name)[i] for i in chosen] or [np.zeros((0, 3))]).T


def decompositions(name: str, K: int) -> list[tuple[int, tuple[int, ...]]]:
    """Every (a, indices of special orbits) with K = |G| a + the sizes of those orbits, one per
    multiset of sizes (orbits of equal size are congruent under the group's normaliser)."""
    n, sizes = len(rotation_group(name)), [len(o) for o in special_orbits(name)]
    out = {}
    for mask in range(2 ** len(sizes)):
        chosen = tuple(i for i in range(len(sizes)) if mask >> i & 1)
        rest = K - sum(sizes[i] for i in chosen)
        if rest >= 0 and rest % n == 0:
            out.setdefault(tuple(sizes[i] for i in chosen), (rest // n, chosen))
    return sorted(out.values())


class OrbitObjective(NamedTuple):
    """The Tammes objective on the configurations of one decomposition, as functions of the (3, a)
    representatives."""

    configuration: Callable  # reps -> (3, K) the whole configuration
    value_and_grad: Callable  # (params {"W": reps}, t[, weights]) -> (smoothed loss, gradient in params)
    max_cos: Callable  # reps[, weights] -> exact max cos over the configuration's pairs
    weights: Callable | None = None  # padded only: masks -> the weights the other two take


@functools.cache
def orbit_objective(name: str, a: int, chosen: tuple[int, ...]) -> OrbitObjective:
    """The log-sum-exp objective of :data:`TAMMES` for the configurations of a representatives and
    the ``chosen`` special orbits, from the pairs (representative, point).

    Every pair of a symmetric configuration is the image under G of a pair (representative, point)
    or of two fixed points. Among the (a, K) terms reps^T W (less each representative with itself,
    column r |G|: G[0] is the identity) a pair of two generic points appears 2 / |G| times as often
    as among the pairs i < j of W, a pair with a fixed point 1 / |G| times. With weights 1 and 2 on
    those columns and 2 / |G| on the constant pairs of fixed points, t LSE(terms / t) is the whole
    configuration's loss less t log(|G| / 2): the same gradient from |G| / 2 times fewer exponentials.
    """
    G = rotation_group(name)
    fixed = _fixed_points(name, chosen)
    order, n_fixed = len(G), fixed.shape[1]
    K = order * a + n_fixed
    # numpy constants: they become float64 in the programs that run with float64 enabled.
    self_pairs = np.zeros((a, K))
    self_pairs[np.arange(a), np.arange(a) * order] = -np.inf
    log_weights = np.log(np.where(np.arange(K) < K - n_fixed, 1.0, 2.0)) + self_pairs
    fixed_cos = (fixed.T @ fixed)[np.triu_indices(n_fixed, 1)]
    fixed_log_weight, fixed_max = np.log(2 / order), fixed_cos.max(initial=-1.0)

    def configuration(reps):
        return jnp.concatenate([jnp.einsum("gij,jr->irg", G, reps).reshape(3, -1), fixed], axis=1)

    def terms(reps):
        return reps.T @ configuration(reps)

    def max_cos(reps):
        return jnp.maximum(jnp.max(terms(reps) + self_pairs), fixed_max)

    def value_and_grad(params, t):  # one exponential per term, as TAMMES.value_and_grad
        z, vjp = jax.vjp(terms, params["W"])
        m = jnp.maximum(jnp.max(z + self_pairs), fixed_max)
        e = jnp.exp((z - m) / t + log_weights)
        total = jnp.sum(e) + jnp.sum(jnp.exp((fixed_cos - m) / t + fixed_log_weight))
        return m + t * jnp.log(total), {"W": vjp(e / total)[0]}

    return OrbitObjective(configuration, value_and_grad, max_cos)


def _orbit_sizes(name: str) -> np.ndarray:
    return np.array([len(o) for o in special_orbits(name)])


@functools.cache
def padded_orbit_objective(name: str, a_pad: int) -> OrbitObjective:
    """:func:`orbit_objective` of every decomposition with a <= a_pad at once, for reps (3, a_pad) and
    masks = (rep_mask (a_pad,), orbit_mask (number of special orbits,)), the first a representatives
    and the chosen orbits: ``value_and_grad`` and ``max_cos`` take ``weights(masks)`` (computed once
    per start, not per step). The configuration is (3, |G| a_pad + every special point); terms with a
    masked representative or point have weight 0, so that one compiled program anneals every
    decomposition of every K up to |G| a_pad."""
    G = rotation_group(name)
    order, sizes = len(G), _orbit_sizes(name)
    fixed = _fixed_points(name, tuple(range(len(sizes))))
    K = order * a_pad + fixed.shape[1]
    is_self = np.zeros((a_pad, K), bool)
    is_self[np.arange(a_pad), np.arange(a_pad) * order] = True
    log_weights = np.log(np.where(np.arange(K) < order * a_pad, 1.0, 2.0))
    upper = np.triu_indices(fixed.shape[1], 1)
    fixed_cos, point_orbit = (fixed.T @ fixed)[upper], np.repeat(np.arange(len(sizes)), sizes)

    def weights(masks):
        """The masks as log weights, computed once per row: (-inf where a term is masked or a
        representative with itself, else 0; the terms' log weights; the largest cos of the chosen
        fixed points, -1 if none; the log weights of the pairs of fixed points)."""
        rep_mask, orbit_mask = masks
        points = orbit_mask[point_orbit]
        col = jnp.concatenate([jnp.repeat(rep_mask, order), points])
        off = jnp.where(rep_mask[:, None] & col[None, :] & ~is_self, 0.0, -jnp.inf)
        fixed_off = jnp.where(points[upper[0]] & points[upper[1]], 0.0, -jnp.inf)
        fixed_max = jnp.max(fixed_cos + fixed_off, initial=-1.0)
        return off, log_weights + off, fixed_max, fixed_off + np.log(2 / order)

    def configuration(reps):
        return jnp.concatenate([jnp.einsum("gij,jr->irg", G, reps).reshape(3, -1), fixed], axis=1)

    def terms(reps):
        return reps.T @ configuration(reps)

    def max_cos(reps, w):
        return jnp.maximum(jnp.max(terms(reps) + w[0]), w[2])

    def value_and_grad(params, t, w):
        off, log_w, fixed_max, fixed_log_w = w
        z, vjp = jax.vjp(terms, params["W"])
        m = jnp.maximum(jnp.max(z + off), fixed_max)
        e = jnp.exp((z - m) / t + log_w)
        total = jnp.sum(e) + jnp.sum(jnp.exp((fixed_cos - m) / t + fixed_log_w))
        return m + t * jnp.log(total), {"W": vjp(e / total)[0]}

    return OrbitObjective(configuration, value_and_grad, max_cos, weights)


@functools.cache
def _padded_anneal_program(name: str, a_pad: int, steps: int):
    """The anneal of :func:`_anneal_program` for jobs (jobs, starts, 3, a_pad) of representatives,
    each start with its masks ((jobs, starts, a_pad), (jobs, starts, number of special orbits)): every
    decomposition of one group with a <= a_pad in one program, called as ``(real, reps, rep_mask,
    orbit_mask)`` with ``real`` (jobs,) False for the copies that fill the blocks
    (:func:`gnc_jax._src.runner.over_slots`: on a CPU those are skipped)."""
    objective = padded_orbit_objective(name, a_pad)
    temps = geometric(0.1, 1e-9, steps)

    def one(reps, rep_mask, orbit_mask):
        w = objective.weights((rep_mask, orbit_mask))
        reps = run_schedule(
            lambda p, t: objective.value_and_grad(p, t, w),
            {"W": normalize_columns(reps)},
            riemannian_adam({"W": rep_mask}),
            retract,
            temps,
            0.5 * temps,
        ).params["W"]
        return objective.configuration(reps), -objective.max_cos(reps, w)

    return CompiledAhead(jax.jit(over_slots(jax.vmap(one))))


@functools.cache
def _anneal_program(name: str, a: int, chosen: tuple[int, ...], steps: int):
    objective = orbit_objective(name, a, chosen)
    optimizer = riemannian_adam({"W": jnp.ones(a, bool)})
    temps = geometric(0.1, 1e-9, steps)

    @jax.jit
    def run(reps):
        reps = normalize_columns(reps)
        anneal = lambda r: run_schedule(
            objective.value_and_grad, {"W": r}, optimizer, retract, temps, 0.5 * temps
        )
        reps = jax.vmap(anneal)(reps).params["W"]
        return jax.vmap(objective.configuration)(reps), -jax.vmap(objective.max_cos)(reps)

    return CompiledAhead(run)


def _distinct_best(score: np.ndarray, keep: int, rtol: float = 1e-9) -> np.ndarray:
    """Indices of the best ``keep`` scores, best first, skipping any within ``rtol`` (relative) of one
    already taken: starts that anneal to the same score are copies of one configuration up to the
    group's symmetries, and polishing a copy again finds nothing new."""
    taken = []
    for i in np.argsort(-score, kind="stable"):
        if all(abs(score[i] - score[j]) > rtol * abs(score[j]) for j in taken):
            taken.append(i)
            if len(taken) == keep:
                break
    return np.array(taken)


def compile_symmetric_starts(K: int, starts: int, steps: int, groups=("I",)) -> None:
    """Start compiling the anneals :func:`symmetric_starts` runs for K (:class:`CompiledAhead`)."""
    for name in groups:
        for a, chosen in decompositions(name, K):
            if a:
                spec = jax.ShapeDtypeStruct((starts, 3, a), jnp.float64)
                _anneal_program(name, a, chosen, steps).start(spec)


@float64
def symmetric_starts(
    K: int, key: jax.Array, starts: int, steps: int, groups=("I",), keep: int = 1
) -> list[np.ndarray]:
    """For every group in ``groups`` and every decomposition of K (:func:`decompositions`), the best
    ``keep`` (at most; (keep, 3, K)) configurations of ``starts`` annealed random representatives
    (``steps`` steps each), best first by their exact score, no two with the same score (to 1e-9,
    relative); the fixed configuration (1, 3, K) where a = 0.
    Empty when K has no decomposition."""
    jobs = [
        (g, name, i, a, chosen)
        for g, name in enumerate(groups)
        for i, (a, chosen) in enumerate(decompositions(name, K))
    ]
    compile_symmetric_starts(K, starts, steps, groups)  # on a background thread while the first ones run
    out = []
    for g, name, i, a, chosen in jobs:
        if a == 0:
            out.append(_fixed_points(name, chosen)[None])
            continue
        # Drawn at one shape for every decomposition of K: a random draw compiles for about as
        # long as the anneal, once per shape.
        draw = jax.random.normal(jax.random.fold_in(jax.random.fold_in(key, g), i), (starts, 3, K))
        W, score = _anneal_program(name, a, chosen, steps)(np.asarray(draw)[:, :, :a])
        out.append(np.asarray(W)[_distinct_best(np.asarray(score), keep)])
    return out


def padded_reps(name: str, K_pad: int) -> int:
    """The representatives of the padded program that serves every K <= K_pad
    (:func:`padded_symmetric_starts`): K = |G| a + special points gives a <= K_pad / |G| (one at
    least, for the placeholder of a K with none)."""
    return max(1, K_pad // len(rotation_group(name)))


def _padded_rows(name: str, K: int, K_pad: int, key: jax.Array, starts: int):
    """The rows (jobs, starts, ...) of representatives and masks of every decomposition of K with
    free points (a placeholder if none), and how many: decomposition i's starts are the first
    columns of a draw (starts, 3, K_pad) from ``fold_in(fold_in(key, 0), i)``, at one shape for the
    whole bucket (a random draw compiles once per shape)."""
    a_pad = padded_reps(name, K_pad)
    found = [(i, a, chosen) for i, (a, chosen) in enumerate(decompositions(name, K)) if a]
    jobs = found or [(0, 1, ())]
    reps = np.zeros((len(jobs), starts, 3, a_pad))
    rep_mask = np.zeros((len(jobs), starts, a_pad), bool)
    orbit_mask = np.zeros((len(jobs), starts, len(special_orbits(name))), bool)
    for j, (i, a, chosen) in enumerate(jobs):
        draw = jax.random.normal(jax.random.fold_in(jax.random.fold_in(key, 0), i), (starts, 3, K_pad))
        reps[j] = np.asarray(draw)[:, :, :a_pad]
        rep_mask[j, :, :a] = True
        orbit_mask[j, :, list(chosen)] = True
    return (reps, rep_mask, orbit_mask), len(found)


@functools.cache
def padded_jobs(name: str, a_pad: int) -> int:
    """The most decompositions with free points that any K served by the padded program has."""
    largest = len(rotation_group(name)) * a_pad + sum(_orbit_sizes(name))
    return max(sum(a > 0 for a, _ in decompositions(name, K)) for K in range(2, largest + 1))


def _padded_shapes(name: str, K_pad: int, starts: int, blocks: int):
    """The argument shapes of the padded program for ``blocks`` requests."""
    a_pad = padded_reps(name, K_pad)
    jobs, f64, flag, spec = blocks * padded_jobs(name, a_pad), jnp.float64, jnp.bool_, jax.ShapeDtypeStruct
    return (
        spec((jobs,), flag),
        spec((jobs, starts, 3, a_pad), f64),
        spec((jobs, starts, a_pad), flag),
        spec((jobs, starts, len(special_orbits(name))), flag),
    )


def compile_padded_starts(name: str, K_pad: int, starts: int, steps: int, blocks: int) -> None:
    """Start compiling the padded program of :func:`padded_symmetric_starts` for ``blocks``."""
    program = _padded_anneal_program(name, padded_reps(name, K_pad), steps)
    program.start(*_padded_shapes(name, K_pad, starts, blocks))


@float64
def padded_symmetric_starts(
    name: str, requests, starts: int, steps: int, K_pad: int, blocks: int
) -> list[list[np.ndarray]]:
    """:func:`symmetric_starts` of one group for up to ``blocks`` requests (K, key, keep) with
    K <= K_pad, every decomposition of every request annealed in one call of one program of
    :func:`padded_reps` representatives (its starts drawn at the bucket's shape, :func:`_padded_rows`;
    the same objective up to rounding). Each request has a block of :func:`padded_jobs`
    decompositions (the missing ones, and the missing blocks, copies of the last one, left out
    after), so that the program's shapes, and what a request gets, depend on neither the other
    requests nor how many there are. One list per request, as ``symmetric_starts(K, key, starts,
    steps, (name,), keep)`` returns it."""
    a_pad = padded_reps(name, K_pad)
    J, drawn, real = padded_jobs(name, a_pad), [], []
    for K, key, _ in requests:
        rows, n = _padded_rows(name, K, K_pad, key, starts)
        drawn.append([np.concatenate([r] + [r[-1:]] * (J - len(r))) for r in rows])
        real += [j < n for j in range(J)]
    drawn += [drawn[-1]] * (blocks - len(requests))
    real += [False] * (J * (blocks - len(requests)))
    rows = [np.concatenate(arrays) for arrays in zip(*drawn)]
    W, score = _padded_anneal_program(name, a_pad, steps)(np.array(real), *rows)
    W, score = np.asarray(W).reshape(blocks, J, starts, 3, -1), np.asarray(score).reshape(blocks, J, starts)
    order = len(rotation_group(name))
    points = np.concatenate([[0], np.cumsum(_orbit_sizes(name))]) + order * a_pad
    out = [[] for _ in requests]
    for r, (K, _, keep) in enumerate(requests):
        j = 0
        for a, chosen in decompositions(name, K):
            if not a:
                out[r].append(_fixed_points(name, chosen)[None])
                continue
            cols = np.concatenate(
                [np.arange(order * a)] + [np.arange(points[c], points[c + 1]) for c in chosen]
            )
            out[r].append(W[r, j][_distinct_best(score[r, j], keep)][:, :, cols])
            j += 1
    return out
