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
    value_and_grad: Callable  # (params {"W": reps}, t) -> (smoothed loss, gradient in params)
    max_cos: Callable  # reps -> exact max cos over the configuration's pairs


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
