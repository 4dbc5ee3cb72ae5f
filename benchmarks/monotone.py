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
"""

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

import gnc_jax
from gnc_jax import SearchSettings, SolverSettings, store
from gnc_jax._src.sweep import Instance, _row, row_provenance

from build_table import best_codes  # benchmarks/, this script's directory

CANDIDATES = 8  # drops that join the solve's population


def less_one_point(W: np.ndarray, count: int = CANDIDATES) -> list[np.ndarray]:
    """The ``count`` configurations of W less one column with the smallest max cosine."""
    G = W.T @ W
    np.fill_diagonal(G, -np.inf)
    K = W.shape[1]
    max_cos = [np.max(np.delete(np.delete(G, i, 0), i, 1)) for i in range(K)]
    return [np.delete(W, i, axis=1) for i in np.argsort(max_cos, kind="stable")[:count]]


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", nargs="*", help="stores joined with the shipped table")
    ap.add_argument("--out", required=True, help="the store the new codes go to")
    ap.add_argument(
        "--tol", type=float, default=1e-9, help="shortfalls up to this are rounding (score units)"
    )
    args = ap.parse_args()
    try:
        out_store = [args.out] if Path(args.out).exists() else []  # none yet on a first run
        codes = table(list(dict.fromkeys(args.stores + out_store)))
    except store.StoreError as e:
        ap.error(str(e))
    solver, search = SolverSettings().with_device_limit(), SearchSettings()
    with store.ResultsStore(args.out) as st:
        for problem, d, K in sorted(codes, key=lambda k: (k[0], k[1], -k[2])):
            score, _, _ = codes[problem, d, K]
            larger = codes.get((problem, d, K + 1))
            if larger is None or score >= larger[0] - args.tol:
                continue
            t0 = time.perf_counter()
            sol = gnc_jax.solve_pairs(
                problem,
                [(d, K)],
                seed=0,
                solver=solver,
                search=search,
                initial={(d, K): less_one_point(larger[1])},
            )[0]
            col, _ = store.SCORE[problem]
            new = sol.summary()[col]
            started = f"the (d, K + 1) code of {larger[2]} less one point"
            settings = {"seed": 0, "weight_decay": 0.0, "initial": started} | dataclasses.asdict(solver)
            provenance = row_provenance(
                0, json.dumps(settings | {"search": dataclasses.asdict(search)}, sort_keys=True)
            )
            inst = Instance(problem, d, K)
            st.append(
                [_row(inst, sol, st.save_config(st.unused_stem(inst.stem()), {"W": sol.W}), provenance)]
            )
            codes[problem, d, K] = (new, sol.W, args.out)
            print(
                f"{problem} d={d} K={K}: {score:.9f} -> {new:.9f} ((d, K + 1): {larger[0]:.9f}) "
                f"{sol.status} in {time.perf_counter() - t0:.1f} s",
                flush=True,
            )
            if new < larger[0] - args.tol:  # the solve lost its start: a bug, not a result
                sys.exit(f"{problem} d={d} K={K}: {new} below the start's {larger[0]}")


if __name__ == "__main__":
    main()
