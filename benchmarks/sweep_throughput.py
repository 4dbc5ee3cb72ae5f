"""Throughput of `gnc_jax.sweep` against solving the same (d, K) pairs one by one.

Both sides run in this process with the same settings and seed, compile time included (what a user
waits for); the one-by-one loop is timed again warm (every shape compiled) to separate the two
effects. Writes benchmarks/results/sweep_throughput.json.

    python benchmarks/sweep_throughput.py [--problem tammes] [--d 2,3,4] [--K 3:19]
"""

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import jax

import gnc_jax
from gnc_jax import store
from gnc_jax.cli import parse_int_spec
from gnc_jax.sweep import device_description, sweep

RESULTS = Path(__file__).parent / "results" / "sweep_throughput.json"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", default="tammes", choices=["tammes", "softmax-code"])
    ap.add_argument("--d", default="2,3,4")
    ap.add_argument("--K", default="3:19")
    ap.add_argument("--restarts", type=int, default=8)
    ap.add_argument("--hop-rounds", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    ds, Ks = parse_int_spec(args.d, "d"), parse_int_spec(args.K, "K")
    pairs = [(d, K) for d in ds for K in Ks]
    budget = dict(restarts=args.restarts, hop_rounds=args.hop_rounds)

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        sweep(
            args.problem,
            ds,
            Ks,
            out=Path(tmp) / "s.csv",
            seed=0,
            batch_size=args.batch,
            progress=None,
            **budget,
        )
        t_sweep = time.perf_counter() - t0
        rows = {(r["d"], r["K"]): r for r in store.read_rows(Path(tmp) / "s.csv")}

    def one_by_one():
        t0 = time.perf_counter()
        sols = [gnc_jax.solve_pairs(args.problem, [p], seed=0, **budget)[0] for p in pairs]
        return time.perf_counter() - t0, sols

    t_cold, sols = one_by_one()
    t_warm, _ = one_by_one()
    score = "min_angle_deg" if args.problem == "tammes" else "rho_one_vs_rest"
    worst = max(abs(rows[(s.d, s.K)][score] - getattr(s, score)) for s in sols)
    result = {
        "problem": args.problem,
        "pairs": len(pairs),
        "d": ds,
        "K": [min(Ks), max(Ks)],
        "settings": budget | {"batch": args.batch},
        "sweep_s": t_sweep,
        "one_by_one_cold_s": t_cold,
        "one_by_one_warm_s": t_warm,
        "speedup_cold": t_cold / t_sweep,
        "speedup_vs_warm_loop": t_warm / t_sweep,
        "max_abs_difference_of_" + score: worst,
        "device": device_description(),
        "jax": jax.__version__,
        "machine": platform.processor() or platform.machine(),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
