"""Icosahedrally symmetric starts for Tammes codes on S^2.

Many best-known codes on S^2 are unions of orbits of a point group. The rotation group I of the
icosahedron (order 60) has generic orbits of 60 points and three special ones: the 12 vertices, 20
face centres and 30 edge midpoints of the icosahedron. For every way of writing
K = 60 a + 30 b + 20 c + 12 e (b, c, e in {0, 1}) the configurations built from a free representative
points and those special orbits have 2a degrees of freedom instead of 2K: :func:`icosahedral_starts`
anneals the representatives (the search's log-sum-exp schedule on the whole orbit configuration) from
random starts and returns the best configuration of each decomposition. They seed the search
(:func:`gnc_jax._src.search.search_tammes`), which polishes them without the symmetry. At K = 120
(two generic orbits) this reaches the best-known angle 19.324020° that the search alone misses by
0.059°; at K = 110 (60 + 30 + 20) it comes within 1.5e-4° where the search alone stops 0.015° below.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from gnc_jax._src.driver import geometric, retract, riemannian_adam, run_schedule
from gnc_jax._src.objectives import TAMMES
from gnc_jax._src.process import float64
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


@functools.cache
def icosahedral_group() -> np.ndarray:
    """The 60 rotations (60, 3, 3) of the icosahedron: the closure of a 5-fold rotation about a
    vertex and a 3-fold rotation about a face centre."""
    gens = [_rotation([0, 1, _PHI], 2 * np.pi / 5), _rotation([1, 1, 1], 2 * np.pi / 3)]
    group = [np.eye(3)]
    frontier = list(group)
    while frontier:
        new = []
        for g in frontier:
            for h in gens:
                m = g @ h
                if not any(np.allclose(m, q) for q in group):
                    group.append(m)
                    new.append(m)
        frontier = new
    return np.array(group)


def _orbit(v) -> np.ndarray:
    """The distinct images (n, 3) of the unit vector v under the group."""
    out = []
    for p in icosahedral_group() @ (np.asarray(v, float) / np.linalg.norm(v)):
        if not any(np.allclose(p, q) for q in out):
            out.append(p)
    return np.array(out)


@functools.cache
def special_orbits() -> dict[int, np.ndarray]:
    """The special orbits by size: 12 vertices, 20 face centres, 30 edge midpoints (n, 3)."""
    return {12: _orbit([0, 1, _PHI]), 20: _orbit([1, 1, 1]), 30: _orbit([0, 0, 1])}


def decompositions(K: int) -> list[tuple[int, tuple[int, ...]]]:
    """Every (a, special orbit sizes) with K = 60 a + the sum of distinct special orbit sizes."""
    out = []
    for mask in range(8):
        sizes = tuple(n for i, n in enumerate((30, 20, 12)) if mask >> i & 1)
        rest = K - sum(sizes)
        if rest >= 0 and rest % 60 == 0:
            out.append((rest // 60, sizes))
    return out


@functools.cache
def _anneal_program(a: int, sizes: tuple[int, ...], steps: int):
    G = jnp.asarray(icosahedral_group())
    fixed = np.concatenate([special_orbits()[n] for n in sizes] or [np.zeros((0, 3))]).T
    fixed = jnp.asarray(fixed)
    K = 60 * a + fixed.shape[1]
    offsets = TAMMES.smoothing_offsets(jnp.ones(K, bool))

    def configuration(reps):  # (3, a) representatives -> (3, K)
        return jnp.concatenate([jnp.einsum("gij,jr->irg", G, reps).reshape(3, -1), fixed], axis=1)

    def value_and_grad(p, t):
        W, vjp = jax.vjp(configuration, p["W"])
        value, grad = TAMMES.value_and_grad({"W": W}, offsets, t)
        return value, {"W": vjp(grad["W"])[0]}

    optimizer = riemannian_adam({"W": jnp.ones(a, bool)})
    temps = geometric(0.1, 1e-9, steps)

    @functools.partial(jax.jit, static_argnums=1)
    def run(key, n: int):
        reps = normalize_columns(jax.random.normal(key, (n, 3, a), jnp.float64))
        anneal = lambda r: run_schedule(value_and_grad, {"W": r}, optimizer, retract, temps, 0.5 * temps)
        reps = jax.vmap(anneal)(reps).params["W"]
        W = jax.vmap(configuration)(reps)
        return W, jax.vmap(lambda W: TAMMES.score({"W": W}, jnp.ones(K, bool)))(W)

    return run


@float64
def icosahedral_starts(K: int, key: jax.Array, starts: int, steps: int) -> list[np.ndarray]:
    """For every decomposition of K (:func:`decompositions`), the best (3, K) configuration of
    ``starts`` annealed random representatives (``steps`` steps each); the fixed configuration where
    a = 0. Empty when K has no decomposition."""
    out = []
    for i, (a, sizes) in enumerate(decompositions(K)):
        if a == 0:
            out.append(np.concatenate([special_orbits()[n] for n in sizes]).T)
            continue
        W, score = _anneal_program(a, sizes, steps)(jax.random.fold_in(key, i), starts)
        out.append(np.asarray(W[int(jnp.argmax(score))]))
    return out
