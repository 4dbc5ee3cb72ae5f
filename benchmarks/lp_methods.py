"""HiGHS's dual simplex against its interior-point method on the SLP polish's own LPs.

For each (d, K), the table's Tammes code is moved 3e-3 (seeded normal noise, renormalised) and
polished for 6 iterations; each LP the polish solves is solved again by both methods in the same
process, and the mean seconds per LP are compared. The ratio (simplex / interior point) is what
``polish.LP_IPM_FIRST_COLUMNS`` rests on (docs/decisions.md).
Results: benchmarks/results/lp_methods.csv.

Usage: python benchmarks/lp_methods.py [--pairs 3,40 8,63 ...]
"""

import argparse
import csv
import time
from pathlib import Path

import numpy as np
from scipy.optimize import linprog

import gnc_jax
from gnc_jax._src import polish
from gnc_jax._src.objectives import get_problem

OUT = Path(__file__).resolve().parent / "results" / "lp_methods.csv"
PAIRS = ["3,40", "3,100", "3,130", "4,40", "4,64", "5,30", "5,64", "6,48", "6,64", "7,40", "7,58", "7,64"]
PAIRS += ["8,32", "8,44", "8,50", "8,56", "8,63"]


def polish_lps(d: int, K: int) -> list:
    """The LPs of a 6-iteration polish of the table's Tammes code at (d, K), moved 3e-3."""
    W = np.asarray(gnc_jax.known_code("tammes", d, K).W, np.float64)
    W = W + 3e-3 * np.random.default_rng(0).standard_normal(W.shape)
    lps, solve = [], polish._solve_lp
    polish._solve_lp = lambda *lp: lps.append(lp) or solve(*lp)
    try:
        polish.polish(get_problem("tammes"), {"W": W / np.linalg.norm(W, axis=0)}, max_iter=6)
    finally:
        polish._solve_lp = solve
    return lps


def seconds(lp, method: str) -> float:
    t = time.perf_counter()
    assert linprog(lp[0], A_ub=lp[1], b_ub=lp[2], bounds=lp[3], method=method).status == 0
    return time.perf_counter() - t


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", nargs="+", default=PAIRS, help="d,K pairs with a Tammes code in the table")
    args = parser.parse_args()
    rows = []
    for pair in args.pairs:
        d, K = map(int, pair.split(","))
        lps = polish_lps(d, K)
        ds = float(np.mean([seconds(lp, "highs-ds") for lp in lps]))
        ipm = float(np.mean([seconds(lp, "highs-ipm") for lp in lps]))
        A = lps[-1][1]
        row = dict(d=d, K=K, lps=len(lps), rows=A.shape[0], columns=A.shape[1], nonzeros=A.nnz)
        row |= dict(simplex_s=round(ds, 4), interior_point_s=round(ipm, 4), ratio=round(ds / ipm, 2))
        print(row, flush=True)
        rows.append(row)
    with open(OUT, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
