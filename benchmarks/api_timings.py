"""Wall time of public API calls, to compare two versions of gnc_jax in the same conditions.

Calls only names that every version since the issue-20 refactor began exports (``gnc_jax.solve_pairs``,
``gnc_jax.solve_ufm``, ``gnc_jax.related.solve_ufm_imbalanced``), so the same file runs on an old
checkout and on the new one:

    python benchmarks/api_timings.py --label new --out benchmarks/results/api_timings.json
    (cd /tmp/old && PYTHONPATH=. python /path/to/benchmarks/api_timings.py --label old --out ...)

Each case runs twice in one process: ``first_s`` includes tracing and compilation (what a user waits
for), ``second_s`` is the compiled program again. The certified score is recorded beside the time, so
a faster version that computes something else shows. Results are appended under ``--label``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import gnc_jax
from gnc_jax._src.cli import settings_from_options
from gnc_jax.related import solve_ufm_imbalanced

ANNEAL = dict(steps=2000, t_start=0.1, t_end=1e-6, hop_rounds=0, polish_steps=1, polish_t_end=1e-6)
CASES = {
    # the driver at a large population: 1024 restarts of d = 3, K = 24
    "anneal d=3 K=24 R=1024": lambda: (
        gnc_jax.solve_pairs(
            "tammes",
            [(3, 24)],
            seed=0,
            **settings_from_options(
                "tammes", dict(ANNEAL, restarts=1024, lp_polish_iters=0, search_rounds=0)
            ),
        )[0].min_angle_deg
    ),
    # the driver at a large K
    "anneal d=8 K=512 R=8": lambda: (
        gnc_jax.solve_pairs(
            "tammes",
            [(8, 512)],
            seed=0,
            **settings_from_options(
                "tammes", dict(ANNEAL, steps=500, restarts=8, lp_polish_iters=0, search_rounds=0)
            ),
        )[0].min_angle_deg
    ),
    # the default pipeline of a small grid: annealer, basin hopping, LP polish, certification
    "softmax-code d=3 K=4..12 defaults": lambda: min(
        s.rho_one_vs_rest for s in gnc_jax.solve_pairs("softmax-code", [(3, k) for k in range(4, 13)], seed=0)
    ),
    "ufm d=8 K=16 n=4 tau=0.1": lambda: gnc_jax.solve_ufm(8, 16, 4, 0.1, seed=0).loss,
    "imbalanced K=4 d=4": lambda: solve_ufm_imbalanced([40, 40, 10, 10], 4, 1e-3, 1e-3, seed=0).loss,
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    results = {}
    for name, case in CASES.items():
        times, values = [], []
        for _ in range(2):
            start = time.perf_counter()
            values.append(float(case()))
            times.append(time.perf_counter() - start)
        results[name] = {"first_s": times[0], "second_s": times[1], "value": values[0]}
        print(
            f"{args.label:>6}  {name:<36} first {times[0]:7.2f} s  second {times[1]:7.2f} s  "
            f"value {values[0]:.10g}"
        )
    data = json.loads(args.out.read_text()) if args.out.exists() else {}
    data[args.label] = results
    args.out.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
