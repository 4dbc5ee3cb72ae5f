"""GNC of HardMax solutions (eq. 5, n = 3 features per class) for d = 3, K = 7, 8, 12, 13, 24.

Theorem 3.7's conjecture predicts GNC3 = 0 where the softmax and Tammes codes coincide. Reports GNC1,
GNC3, the largest deviation of H from eq. (9), the rattlers, and rho of the best Tammes code found.
Writes benchmarks/results/hardmax_gnc_d3.json. Usage: python benchmarks/hardmax_gnc_d3.py
"""

import json
import time
from pathlib import Path

import numpy as np

import gnc_jax

PAIRS = [(3, 7), (3, 8), (3, 12), (3, 13), (3, 24)]


def main():
    t = time.perf_counter()
    sols = gnc_jax.solve_pairs("hardmax", PAIRS, n=3, seed=0)
    tammes = gnc_jax.solve_pairs("tammes", PAIRS, seed=0)
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
            }
        )
        print(json.dumps(rows[-1]))
    out = Path(__file__).parent / "results" / "hardmax_gnc_d3.json"
    out.write_text(json.dumps({"rows": rows, "wall_s": time.perf_counter() - t}, indent=1))


if __name__ == "__main__":
    main()
