"""Codes of K points from codes of K + 1: the table's pairs whose code is below the code of one point more.

Removing a point from a code removes only that point's chords, and shrinks the convex hull of every
other point's rivals, so neither the min angle (eq. 11) nor the one-vs-rest margin (eq. 3) can fall:
the best code of (d, K) is at least as good as that of (d, K + 1). Where a table breaks this, its
(d, K) code is not the best we can make. For each such pair (largest K first, so that a new code
seeds the pair below it), the code of K + 1 less each of its points is ranked by its min angle, and
the best eight join the population of a default-settings solve of (d, K) (``initial``, seed 0); the
certified solution goes to the store OUT, its settings naming the code it started from.

The table is the shipped one (gnc_jax/data/codes.csv) joined with the best rows of the STOREs and of
OUT (so a rerun does not solve again what OUT already holds):

    python benchmarks/monotone.py --out benchmarks/results/table46/monotone.csv \\
        benchmarks/results/table46/codes_budget.csv
    python benchmarks/build_table.py --merge benchmarks/results/table46/monotone.csv

With ``--neighbours`` (Tammes codes; ``--d`` picks dimensions) every pair is screened, not only those
below the next: the code of K + 1 less each point and the code of K - 1 plus a point in each of its 16
deepest holes (of 8 K random points, drawn from jax.random.key(K)) are annealed from t = 1e-2 and
solved by 80 Newton steps; where the best of them beats the pair's code, the best eight join the
solve's population as above (``gnc_jax._src.neighbours.neighbour_pass``, the pass that
``gnc-jax sweep --neighbours`` runs over a sweep's own store). Pairs run by increasing K, so that a new
code of K - 1 seeds K, and a pair raised sends K - 1 and K + 1 back to be screened (docs/table.md,
"Codes from their neighbours"):

    python benchmarks/monotone.py --neighbours --d 6 --out benchmarks/results/table46/neighbours.csv
"""

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import jax

import gnc_jax
from gnc_jax import SearchSettings, SolverSettings, store
from gnc_jax._src.neighbours import less_one_point, neighbour_pass
from gnc_jax._src.sweep import Instance, _row, row_provenance

from build_table import best_codes  # benchmarks/, this script's directory

CANDIDATES = 8  # drops that join the solve's population


def table(stores) -> dict:
    """{(problem, d, K): (score, W, where)}: the best code per pair of the shipped table and STOREs."""
    return {
        (r["problem"], r["d"], r["K"]): (
            r[store.SCORE[r["problem"]][0]],
            W,
            "the shipped table" if r["source"] == "shipped" else r["source"],
        )
        for r, W in best_codes(stores, ("tammes", "softmax-code"), merge=True)
    }


def solve_from(st, codes: dict, problem: str, d: int, K: int, initial: list, started: str, settings) -> float:
    """A default-settings solve of (problem, d, K) (seed 0) with ``initial`` in its population; the
    certified row goes to ``st`` (its settings name ``started``) and the code to ``codes``. Returns
    the new score."""
    solver, search = settings
    t0 = time.perf_counter()
    sol = gnc_jax.solve_pairs(
        problem, [(d, K)], seed=0, solver=solver, search=search, initial={(d, K): initial}
    )[0]
    col, _ = store.SCORE[problem]
    new = sol.summary()[col]
    options = {"seed": 0, "weight_decay": 0.0, "initial": started} | dataclasses.asdict(solver)
    options |= {"search": dataclasses.asdict(search)}
    provenance = row_provenance(0, json.dumps(options, sort_keys=True))
    inst = Instance(problem, d, K)
    st.append([_row(inst, sol, st.save_config(st.unused_stem(inst.stem()), {"W": sol.W}), provenance)])
    old = codes[problem, d, K][0]
    codes[problem, d, K] = (new, sol.W, st.path.as_posix())
    print(
        f"{problem} d={d} K={K}: {old:.9f} -> {new:.9f} ({started}) {sol.status} in "
        f"{time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    return new


def neighbour_screen(st, codes: dict, pairs, settings) -> int:
    """The neighbour pass (module docstring) over the Tammes ``pairs`` of ``codes`` (the table),
    each new code going to the store ``st`` and to ``codes``. Returns how many pairs it raised."""

    def best(d, K):
        return codes["tammes", d, K][:2] if ("tammes", d, K) in codes else None

    def solve(d, K, Z, angles):
        started = f"finished neighbour codes, best {angles[0]:.9f}"
        return solve_from(st, codes, "tammes", d, K, list(Z[:CANDIDATES]), started, settings)

    return neighbour_pass(pairs, best, solve, lambda d, K: jax.random.key(K), progress=None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", nargs="*", help="stores joined with the shipped table")
    ap.add_argument("--out", required=True, help="the store the new codes go to")
    ap.add_argument(
        "--tol",
        type=float,
        default=1e-9,
        help="the monotone pass: shortfalls up to this are rounding (score units)",
    )
    ap.add_argument("--neighbours", action="store_true", help="screen every Tammes pair (docstring)")
    ap.add_argument("--d", default="", help="with --neighbours: the dimensions, e.g. 5,6 (default all)")
    args = ap.parse_args()
    if args.d and not args.neighbours:
        ap.error("--d applies only with --neighbours")
    try:
        dims = {int(v) for v in args.d.split(",") if v.strip()}
    except ValueError:
        ap.error(f"--d must be comma-separated integers, got {args.d!r}")
    try:
        out_store = [args.out] if Path(args.out).exists() else []  # none yet on a first run
        codes = table(list(dict.fromkeys(args.stores + out_store)))
    except store.StoreError as e:
        ap.error(str(e))
    settings = SolverSettings().with_device_limit(), SearchSettings()
    with store.ResultsStore(args.out) as st:
        if args.neighbours:
            pairs = sorted((d, K) for p, d, K in codes if p == "tammes" and (not dims or d in dims))
            if not pairs:
                ap.error(f"--d {args.d}: the table has no Tammes code of these dimensions")
            neighbour_screen(st, codes, pairs, settings)
            return
        for problem, d, K in sorted(codes, key=lambda k: (k[0], k[1], -k[2])):
            score, _, _ = codes[problem, d, K]
            larger = codes.get((problem, d, K + 1))
            if larger is None or score >= larger[0] - args.tol:
                continue
            started = f"the (d, K + 1) code of {larger[2]} less one point"
            new = solve_from(
                st, codes, problem, d, K, less_one_point(larger[1], CANDIDATES), started, settings
            )
            if new < larger[0] - args.tol:  # the solve lost its start: a bug, not a result
                sys.exit(f"{problem} d={d} K={K}: {new} below the start's {larger[0]}")


if __name__ == "__main__":
    main()
