"""The table of codes shipped with gnc_jax: the best configuration found for every (problem, d, K) of
the table (``gnc_jax/data/codes.csv``, a results store, and ``codes.npz``, its configurations), so
that a code comes without solving. ``benchmarks/build_table.py`` builds it from sweep stores."""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import numpy as np

from gnc_jax._src import geometry, runner, store
from gnc_jax._src.batch import Solution, certified_rattlers, proven_status
from gnc_jax._src.errors import InvalidArgument
from gnc_jax._src.objectives import get_problem
from gnc_jax._src.process import float64
from gnc_jax._src.status import Status

DATA = Path(__file__).resolve().parents[1] / "data"
TABLE, CONFIGS = DATA / "codes.csv", DATA / "codes.npz"
PROBLEMS = ("tammes", "softmax-code")


def config_name(row: dict) -> str:
    """The name of a row's configuration in ``codes.npz``."""
    return f"{row['problem']}_d{row['d']}_K{row['K']}"


@functools.cache
def table_rows() -> dict[tuple, dict]:
    """The shipped table's rows by (problem, d, K)."""
    return {(r["problem"], r["d"], r["K"]): r for r in store.read_rows(TABLE)}


@float64
def known_code(problem: str, d: int, K: int) -> Solution:
    """The best code gnc_jax has found for (problem, d, K), from the table shipped with it, with every
    number certified again from the configuration (float64, exact QPs; eq. 11 for Tammes codes,
    eq. 3 for softmax codes). The status, residual and provenance are the table's, except that a code
    within 1e-12 of a proven optimum (:func:`gnc_jax.theory.tammes_closed_form`, Theorem 3.3) is
    ``optimal`` even where the run that stored it did not know the proof.

    Args:
      problem: 'tammes' or 'softmax-code'.
      d, K: the pair (the table covers d = 2..8 with K <= 64, and d = 3 with K <= 130).

    Returns:
      A `Solution` (``wall_s``, ``restarts`` and ``hits`` are those of the run that found it).

    >>> code = known_code("tammes", 3, 12)  # the icosahedron
    >>> round(code.min_angle_deg, 9), str(code.status)
    (63.434948823, 'optimal')
    """
    if problem not in PROBLEMS:
        raise InvalidArgument(f"problem must be one of {list(PROBLEMS)}, got {problem!r}")
    (d,), (K,) = runner.positive_ints("d", d), runner.positive_ints("K", K)
    row = table_rows().get((problem, d, K))
    if row is None:
        raise InvalidArgument(
            f"the table holds no {problem} code for d={d}, K={K} (gnc_jax.solve_pairs finds one)"
        )
    with np.load(CONFIGS) as npz:
        W = np.asarray(npz[row["config"]], np.float64)
    sep = jax.device_get(geometry.separation(W))
    score = store.SCORE[problem][0]
    value = float(getattr(sep, score))
    if not abs(value - row[score]) <= 1e-9 * max(1.0, abs(row[score])):
        raise RuntimeError(
            f"the shipped {problem} code for d={d}, K={K} certifies at {score} = {value!r}, not the "
            f"table's {row[score]!r}: the package data is damaged"
        )
    batched = jax.tree_util.tree_map(lambda v: np.asarray(v)[None], sep)
    prob = get_problem(problem)
    status, residual = proven_status(
        prob, d, K, Status(row["status"]), row["residual"], sep.max_cos, sep.rho_lower
    )
    return Solution(
        problem=problem,
        d=d,
        K=K,
        W=W,
        **{name: float(getattr(sep, name)) for name in store.CERTIFIED},
        distances=np.asarray(sep.distances),
        rattlers=certified_rattlers(prob, batched, 0, K, 1e-6),
        status=status,
        residual=residual,
        status_note=row["status_note"] or "",
        restarts=row["restarts"],
        hits=row["hits"],
        wall_s=row["wall_s"],
    )
