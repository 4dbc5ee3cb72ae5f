"""A whole solve at K = 10^5 on this CPU: peak memory and time of a short schedule, certified.

The default schedule keeps at least 100 annealing steps (``driver.MIN_SCHEDULE_STEPS``), about a
minute each at K = 10^5 on 2 CPU cores, so this runs one restart of ``--steps`` + ``--polish-steps``
float64 steps instead: the point is the memory of every stage (the annealer's terms and the
certification in column blocks, the QP weights sparse), not the code's quality. Peak resident
memory from ``getrusage`` (and the accelerator's ``peak_bytes_in_use`` where there is one); a dense
K x K array alone would be 80 GB. The solve's progress lines (the compiled anneal's elapsed time, then
the certification) go to stderr. Writes benchmarks/results/scale_memory.json.

Usage: python benchmarks/scale_memory.py [--d 16] [--K 100000] [--steps 4] [--polish-steps 2]
"""

import argparse
import json
import resource
import sys
import time
from pathlib import Path

OUT = Path(__file__).parent / "results" / "scale_memory.json"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--K", type=int, default=100_000)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--polish-steps", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    t = time.perf_counter()
    import gnc_jax

    settings = dict(
        work_limit=0,
        restarts=1,
        hop_rounds=0,
        steps=args.steps,
        polish_steps=args.polish_steps,
        t_start=0.05,
        t_end=1e-3,
        polish_t_end=1e-4,
        lp_polish_iters=0,
    )
    try:  # bad --d, --K or step counts: the API's ValueError names the argument; one line, exit 2
        solver = gnc_jax.SolverSettings(**settings)
        sol = gnc_jax.solve_softmax_code(args.d, args.K, seed=0, solver=solver, progress=sys.stderr)
    except ValueError as e:
        ap.error(str(e))
    import jax

    device = jax.devices()[0]
    peak = (device.memory_stats() or {}).get("peak_bytes_in_use")  # an accelerator's; a CPU has none
    row = {
        "d": args.d,
        "K": args.K,
        "problem": "softmax-code",
        "settings": settings,
        "wall_s": time.perf_counter() - t,
        "device": device.device_kind,
        "device_peak_gib": None if peak is None else peak / 2**30,
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "max_cos": sol.max_cos,
        "rho_upper": sol.rho_one_vs_rest,
        "rho_lower": sol.rho_lower,
        "status": str(sol.status),
        "lp_max_cos_bound": gnc_jax.theory.max_cos_lower_bound(args.d, args.K),
        "dense_k_by_k_gib": args.K**2 * 8 / 2**30,
        "command": f"python benchmarks/scale_memory.py --d {args.d} --K {args.K} --steps {args.steps} "
        f"--polish-steps {args.polish_steps}",
    }
    print(json.dumps(row), flush=True)
    args.out.write_text(json.dumps(row, indent=1) + "\n")


if __name__ == "__main__":
    main()
