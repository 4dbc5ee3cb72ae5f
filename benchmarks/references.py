"""The solvers' default codes against independent references: the Kerdock codes (d / 2 + 1 mutually
unbiased bases and their negatives, max cos 1/sqrt(d), d (d + 2) points) and the LP bound on max cos.

For each (d, K), both problems with default settings (one process, seed 0): the certified max cos
and one-vs-rest margin, the same of the Kerdock code's first K points (a subset, max cos 1/sqrt(d)
once K > 2d), the LP lower bound on max cos (:func:`gnc_jax.theory.max_cos_lower_bound`) and the
ratio (1 - max cos) / (1 - bound), 1 where a code reaches the bound. Rows are appended to the JSON
file as they finish (an interrupted run keeps them; a rerun skips them).

Usage: python benchmarks/references.py [--pairs 4:24,16:48,...] [--out FILE]
"""

import argparse
import json
import time
from pathlib import Path

import gnc_jax
from gnc_jax import theory

OUT = Path(__file__).parent / "results" / "references.json"
PAIRS = "4:24,16:48,16:96,16:144,16:288"


def reference_row(d: int, K: int) -> dict:
    subset = theory.kerdock_code(d)[:, :K]
    bound = theory.max_cos_lower_bound(d, K)
    return {
        "d": d,
        "K": K,
        "kerdock_max_cos": gnc_jax.max_cos(subset),
        "kerdock_rho": gnc_jax.softmax_code_margin(subset),
        "lp_max_cos_bound": bound,
    }


def solved(problem: str, d: int, K: int, bound: float) -> dict:
    t = time.perf_counter()
    s = gnc_jax.solve(problem, d, K, seed=0)
    return {
        "max_cos": s.max_cos,
        "rho": s.rho_one_vs_rest,
        "status": str(s.status),
        "ratio_to_bound": (1 - s.max_cos) / (1 - bound),
        "wall_s": time.perf_counter() - t,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", default=PAIRS, help="d:K,d:K,... (d in 4, 16)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    rows = json.loads(args.out.read_text()) if args.out.exists() else []
    done = {(r["d"], r["K"]) for r in rows}
    for item in args.pairs.split(","):
        d, K = map(int, item.split(":"))
        if (d, K) in done:
            continue
        row = reference_row(d, K)
        for problem in ("tammes", "softmax-code"):  # the softmax code takes the Tammes codes just solved
            row[problem] = solved(problem, d, K, row["lp_max_cos_bound"])
        rows.append(row)
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
