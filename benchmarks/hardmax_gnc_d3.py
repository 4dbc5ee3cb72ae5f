"""GNC of HardMax solutions (eq. 5, n = 3 features per class) for d = 3, K = 7, 8, 12, 13, 24.

Theorem 3.7's conjecture predicts GNC3 = 0 where the softmax and Tammes codes coincide. Reports GNC1,
GNC3, the largest deviation of H from eq. (9), the rattlers, and rho of the best Tammes code found.
Updates the rows of these K in benchmarks/results/hardmax_gnc_d3.json.
Usage: python benchmarks/hardmax_gnc_d3.py [--restarts 64] [--hop-rounds 6] [--K 7,8,12,13,24]
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np

import gnc_jax
from gnc_jax._src.cli import settings_from_options


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--restarts", type=int, default=64)
    ap.add_argument("--hop-rounds", type=int, default=6)
    ap.add_argument("--K", default="7,8,12,13,24")
    args = ap.parse_args()
    pairs = [(3, int(k)) for k in args.K.split(",")]
    budget = {"restarts": args.restarts, "hop_rounds": args.hop_rounds}
    t = time.perf_counter()
    sols = gnc_jax.solve_pairs("hardmax", pairs, n=3, seed=0, **settings_from_options("hardmax", budget))
    tammes = gnc_jax.solve_pairs("tammes", pairs, seed=0)
    rows = []
    for s, tt in zip(sols, tammes):
        eq9 = np.repeat(gnc_jax.optimal_features(s.W), 3, axis=1)
        rows.append(
            {
                "d": s.d,
                "K": s.K,
                "rho": s.rho_one_vs_rest,
                "rho_of_tammes_code": gnc_jax.softmax_code_margin(tt.W),
                "gnc1": s.gnc1,
                "gnc3": s.gnc3,
                "max_abs_H_minus_eq9": float(np.nanmax(np.abs(s.H - eq9))),
                "rattlers": s.rattlers.tolist(),
                "status": s.status,
                **budget,
                "wall_s": time.perf_counter() - t,
            }
        )
        print(json.dumps(rows[-1]))
    out = Path(__file__).parent / "results" / "hardmax_gnc_d3.json"
    kept = json.loads(out.read_text())["rows"] if out.exists() else []
    done = {(r["d"], r["K"]) for r in rows}
    rows = sorted([r for r in kept if (r["d"], r["K"]) not in done] + rows, key=lambda r: r["K"])
    out.write_text(json.dumps({"rows": rows}, indent=1))


if __name__ == "__main__":
    main()
