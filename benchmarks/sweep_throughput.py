"""Throughput of `gnc_jax._src.sweep` against solving the same (d, K) pairs one by one.

Every side runs cold in a fresh process (compilation included: what a user waits for) with the same
settings and seed: the sweep with its pipelined workers, the sweep with one worker, and a loop calling
``solve_pairs`` once per pair, which is then timed again warm (every shape compiled) to separate
compilation from solving. The answers of all sides are compared. Writes
benchmarks/results/sweep_throughput.json.

    python benchmarks/sweep_throughput.py [--problem tammes] [--d 3,4] [--K 20:28] [--restarts 16]
"""

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "sweep_throughput.json"


def run_side(args):
    """One side, in this (fresh) process: prints {"seconds": ..., "scores": {...}} as JSON."""
    import gnc_jax
    from gnc_jax import store
    from gnc_jax._src.cli import parse_int_spec, settings_from_options
    from gnc_jax._src.process import tune_allocator
    from gnc_jax._src.sweep import sweep

    tune_allocator()  # as the gnc-jax command does

    ds, Ks = parse_int_spec(args.d, "d"), parse_int_spec(args.K, "K")
    budget = dict(restarts=args.restarts, hop_rounds=args.hop_rounds)
    score = "min_angle_deg" if args.problem == "tammes" else "rho_one_vs_rest"
    out = {}
    if args.side == "loop":
        for label in ("seconds", "warm_seconds"):
            t0 = time.perf_counter()
            sols = [
                gnc_jax.solve_pairs(
                    args.problem, [(d, K)], seed=0, **settings_from_options(args.problem, budget)
                )[0]
                for d in ds
                for K in Ks
            ]
            out[label] = time.perf_counter() - t0
        out["scores"] = {f"{s.d},{s.K}": getattr(s, score) for s in sols}
    else:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            sweep(
                args.problem,
                ds,
                Ks,
                out=Path(tmp) / "s.csv",
                seed=0,
                batch_size=args.batch,
                workers=args.workers,
                progress=None,
                **settings_from_options(args.problem, budget),
            )
            out["seconds"] = time.perf_counter() - t0
            out["scores"] = {f"{r['d']},{r['K']}": r[score] for r in store.read_rows(Path(tmp) / "s.csv")}
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", default="tammes", choices=["tammes", "softmax-code"])
    ap.add_argument("--d", default="3,4")
    ap.add_argument("--K", default="20:28")
    ap.add_argument("--restarts", type=int, default=16)
    ap.add_argument("--hop-rounds", type=int, default=2)
    ap.add_argument("--batch", type=int, default=None, help="default: the sweep's (1 on CPU)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--side", choices=["sweep", "loop"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side:
        return run_side(args)

    common = [
        sys.executable,
        __file__,
        "--problem",
        args.problem,
        "--d",
        args.d,
        "--K",
        args.K,
        "--restarts",
        str(args.restarts),
        "--hop-rounds",
        str(args.hop_rounds),
    ] + ([] if args.batch is None else ["--batch", str(args.batch)])
    sides = {
        "sweep": common + ["--side", "sweep", "--workers", str(args.workers)],
        "sweep_1_worker": common + ["--side", "sweep", "--workers", "1"],
        "one_by_one": common + ["--side", "loop"],
    }
    res = {}
    for name, cmd in sides.items():
        res[name] = json.loads(
            subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()[-1]
        )
        print(name, f"{res[name]['seconds']:.1f} s", flush=True)
    ref = res["one_by_one"]["scores"]
    import jax

    from gnc_jax._src.sweep import default_batch_size, device_description

    result = {
        "problem": args.problem,
        "pairs": len(ref),
        "d": args.d,
        "K": args.K,
        "settings": {
            "restarts": args.restarts,
            "hop_rounds": args.hop_rounds,
            "batch": args.batch or default_batch_size(),
            "workers": args.workers,
        },
        "sweep_s": res["sweep"]["seconds"],
        "sweep_1_worker_s": res["sweep_1_worker"]["seconds"],
        "one_by_one_cold_s": res["one_by_one"]["seconds"],
        "one_by_one_warm_s": res["one_by_one"]["warm_seconds"],
        "speedup_vs_one_by_one": res["one_by_one"]["seconds"] / res["sweep"]["seconds"],
        "speedup_1_worker_vs_one_by_one": res["one_by_one"]["seconds"] / res["sweep_1_worker"]["seconds"],
        "max_abs_score_difference": max(
            abs(res[s]["scores"][k] - ref[k]) for s in ("sweep", "sweep_1_worker") for k in ref
        ),
        "device": device_description(),
        "cpu_cores": __import__("os").cpu_count(),
        "jax": jax.__version__,
        "machine": platform.processor() or platform.machine(),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
