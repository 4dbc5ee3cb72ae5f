"""OpenBLAS threads under the search's batched LAPACK calls: the caller's default against one thread.

The interior-point finish of the Tammes search factors a batch of small matrices (a few hundred rows)
per Newton step through the LAPACK of scipy's OpenBLAS, which XLA:CPU calls.
:func:`gnc_jax._src.process.one_at_a_time` now runs such programs with OpenBLAS on one thread. This
times the vmapped solve (a population of 32, 80 Newton steps at d = 3, K = 100, compiled once, then
3 calls) both ways, in one process alone and in two processes at once (as ``pytest -n 2`` or two
sweeps run), each configuration in fresh processes of the same run.
Results: benchmarks/results/openblas_threads.json.

Usage: python benchmarks/openblas_threads.py [--K 100]
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results" / "openblas_threads.json"


def child(K: int, one_thread: bool) -> float:
    """Mean seconds of 3 calls of the vmapped solve (after one that compiles)."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    from gnc_jax._src.interior import interior_point
    from gnc_jax._src.process import one_at_a_time
    from gnc_jax._src.sphere import normalize_columns

    X = normalize_columns(jax.random.normal(jax.random.key(0), (32, 3, K), jnp.float64))
    program = jax.jit(jax.vmap(lambda x: interior_point(x, 80)))
    run = one_at_a_time(program) if one_thread else lambda X: program(X).block_until_ready()
    run(X)
    t = time.perf_counter()
    for _ in range(3):
        run(X)
    return (time.perf_counter() - t) / 3


def measure(K: int, one_thread: bool, processes: int) -> list[float]:
    cmd = [sys.executable, __file__, "--child", str(int(one_thread)), "--K", str(K)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(processes)]
    return [round(float(p.communicate()[0].split()[-1]), 3) for p in procs]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--K", type=int, default=100)
    parser.add_argument("--child", type=int, choices=(0, 1), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(child(args.K, bool(args.child)))
        return
    rows = []
    for processes in (1, 2):
        for one_thread in (False, True):
            seconds = measure(args.K, one_thread, processes)
            rows.append(
                {
                    "d": 3,
                    "K": args.K,
                    "population": 32,
                    "newton_steps": 80,
                    "openblas": "one thread" if one_thread else "default",
                    "processes_at_once": processes,
                    "seconds_per_process": seconds,
                }
            )
            print(rows[-1], flush=True)
    OUT.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
