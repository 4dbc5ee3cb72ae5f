"""Tammes codes of K points from the codes of K - 1 and K + 1 (a sweep's neighbour pass).

Removing a point from a code removes only that point's chords, so the best min angle (eq. 11) of
(d, K) is at least that of (d, K + 1); and a code of K - 1 leaves holes where one more point fits.
Some of the table's codes of K are one of these, seldom reached by a random draw or the search's moves
(docs/results.md, "Where the d >= 5 misses come from"). The candidates: the code of K - 1 plus
a point in each of its deepest holes, and the code of K + 1 less each point, each annealed (log-sum-exp,
from t = 1e-2) and finished by the interior-point Newton steps: every one, since the ranking after the
anneal alone misleads (docs/results.md, "A neighbour pass in the sweep"). :func:`neighbour_pass` screens
pairs with them, for ``gnc-jax sweep --neighbours`` (a sweep's store) and ``benchmarks/monotone.py``
(the table).

>>> import numpy as np
>>> octahedron = np.hstack([np.eye(3), -np.eye(3)])
>>> [W.shape for W in less_one_point(octahedron, 2)]
[(3, 5), (3, 5)]
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from gnc_jax._src.errors import InvalidArgument
from gnc_jax._src.driver import geometric, retract, riemannian_adam, run_schedule
from gnc_jax._src.interior import interior_point
from gnc_jax._src.objectives import TAMMES
from gnc_jax._src.process import float64
from gnc_jax._src.search import _min_chord, angle_deg

GAIN_DEG = 1e-6  # a finished candidate above the pair's code by more: the pair is solved again
HOLES = 16  # the code of K - 1 plus a point: this many of its deepest holes
NEWTON_STEPS = 80  # the interior-point finish of a candidate
KEEP = 8  # candidates returned, the best finished ones


def less_one_point(W: np.ndarray, count: int) -> list[np.ndarray]:
    """The ``count`` configurations of W less one column with the smallest max cosine, best first."""
    G = W.T @ W
    np.fill_diagonal(G, -np.inf)
    K = W.shape[1]
    max_cos = [np.max(np.delete(np.delete(G, i, 0), i, 1)) for i in range(K)]
    return [np.delete(W, i, axis=1) for i in np.argsort(max_cos, kind="stable")[:count]]


@float64  # the draw of hole candidates in float64
def plus_one_point(W: np.ndarray, key: jax.Array, holes: int = HOLES) -> list[np.ndarray]:
    """W with one more column at each of its ``holes`` deepest holes: the points, of 8 K random ones
    (drawn from ``key``), farthest from their nearest column of W, deepest first."""
    d, K = W.shape
    P = np.array(jax.random.normal(key, (d, 8 * K), jnp.float64))
    P /= np.linalg.norm(P, axis=0)
    return [np.concatenate([W, P[:, j : j + 1]], axis=1) for j in np.argsort((P.T @ W).max(axis=1))[:holes]]


@functools.cache
def _programs(K: int, t0: float, steps: int, rate: float):
    """The jitted, vmapped anneal and finish of configurations of K points, and the column mask."""
    col = jnp.ones(K, bool)
    temps = geometric(t0, 1e-9, steps)
    offsets = TAMMES.smoothing_offsets(col)

    def anneal(X):
        vg = lambda p, t: TAMMES.value_and_grad(p, offsets, t)
        return run_schedule(vg, {"W": X}, riemannian_adam({"W": col}), retract, temps, rate * temps).params[
            "W"
        ]

    def finish(X):
        Y = interior_point(X, NEWTON_STEPS)
        return jnp.where(_min_chord(Y, col) > _min_chord(X, col), Y, X)

    return jax.jit(jax.vmap(anneal)), jax.jit(jax.vmap(finish)), col


@float64  # the schedule, the anneal and the finish in float64 whatever the caller's precision
def anneal_and_finish(
    X: np.ndarray, t0: float = 1e-2, steps: int = 1000, rate: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """Configurations (n, d, K) to their local optima: the log-sum-exp anneal from t0 down to 1e-9 in
    ``steps`` steps (learning rate ``rate`` x t), then the interior-point finish (``NEWTON_STEPS``),
    kept where it raises the min chord.

    Args:
      X: (n, d, K) unit columns.
      t0, steps, rate: the anneal's schedule.

    Returns:
      The optima (n, d, K) and the min angle (degrees) of each, in X's order.
    """
    anneal, finish, col = _programs(X.shape[-1], float(t0), int(steps), float(rate))
    Z = np.asarray(finish(anneal(jnp.asarray(X, jnp.float64))))
    return Z, np.array([angle_deg(float(_min_chord(z, col))) for z in Z])


def neighbour_codes(
    d: int, K: int, lower: np.ndarray | None, upper: np.ndarray | None, key: jax.Array, keep: int = KEEP
) -> tuple[np.ndarray, np.ndarray]:
    """The best ``keep`` finished candidates of (d, K) from the code ``lower`` of K - 1 and ``upper`` of
    K + 1 (either may be None), best first.

    Args:
      d, K: the pair.
      lower: (d, K - 1) unit columns, or None.
      upper: (d, K + 1) unit columns, or None.
      key: the draw of ``lower``'s hole candidates.
      keep: how many are returned.

    Returns:
      The candidates (n, d, K) and their min angles (degrees), best first; n = 0 if both are None.
    """
    for name, code, k in (("lower", lower, K - 1), ("upper", upper, K + 1)):
        if code is not None and np.shape(code) != (d, k):
            raise InvalidArgument(f"{name} must have shape {(d, k)}, got {np.shape(code)}")
    starts = plus_one_point(np.asarray(lower), key) if lower is not None else []
    if upper is not None:
        starts += less_one_point(np.asarray(upper), K + 1)  # every point
    if not starts:
        return np.zeros((0, d, K)), np.zeros(0)
    Z, angles = anneal_and_finish(np.stack(starts))
    order = np.argsort(-angles, kind="stable")[:keep]
    return Z[order], angles[order]


def neighbour_pass(
    pairs,
    best: Callable,
    solve: Callable,
    key: Callable,
    progress=sys.stderr,
) -> int:
    """Screen the Tammes pairs by increasing K: where the best of :func:`neighbour_codes` from the
    current best codes of K - 1 and K + 1 is above the pair's by more than ``GAIN_DEG``, the pair is
    solved again with the candidates in its population. A pair raised puts its neighbours among
    ``pairs`` back in the queue, so a code of K + 1 raised after K was screened is tried on K.

    Args:
      pairs: the (d, K) pairs screened.
      best: ``best(d, K)`` -> (min angle in degrees, W) of the pair's best code now, or None.
      solve: ``solve(d, K, Z, angles)`` solves the pair with the candidates Z (best first, their
        min angles ``angles``) in its population, records the code and returns its min angle.
      key: ``key(d, K)`` -> the jax key of the hole draw.
      progress: a file for one line per pair solved (None: silent).

    Returns:
      How many pairs the pass raised.

    Raises:
      RuntimeError: a solve ended below its best candidate (it lost its start: a bug, not a result).
    """
    pairs = set(pairs)
    queue, raised = set(pairs), set()
    while queue:
        d, K = min(queue)
        queue.remove((d, K))
        now = best(d, K)
        if now is None:
            continue
        lower, upper = ((c[1] if (c := best(d, k)) is not None else None) for k in (K - 1, K + 1))
        Z, angles = neighbour_codes(d, K, lower, upper, key(d, K))
        if not len(angles) or angles[0] <= now[0] + GAIN_DEG:
            continue
        new = solve(d, K, Z, angles)
        if progress is not None:
            print(f"neighbours: tammes d={d} K={K}: {now[0]:.9f} -> {new:.9f} deg", file=progress, flush=True)
        if new < angles[0] - GAIN_DEG:
            raise RuntimeError(
                f"tammes d={d} K={K}: the solve ended at {new} deg, below its start's {angles[0]}"
            )
        if new > now[0] + GAIN_DEG:
            raised.add((d, K))
            queue |= {(d, K - 1), (d, K + 1)} & pairs
    return len(raised)
