"""The Tammes anneal's step with the one-product pull-back of W^T W against autodiff's two products.

A step of the Tammes anneal forms the Gram matrix W^T W and pulls the softmax P of its terms back
through it. The smoothing runs over every ordered pair, so P is symmetric and the gradient is 2 W P
(:func:`gnc_jax._src.objectives.tammes_pullback`, one product); autodiff of ``W.T @ W`` forms two
(W P^T and W P). At K >> d the products are most of a step. This times ``TAMMES.value_and_grad``
(jitted, vmapped over one configuration as the annealer runs it, float64, t = 0.01) both ways in one
process: per (d, K), the fastest of 5 interleaved timings of each (after the calls that compile),
and the largest difference of the two gradients. Results: benchmarks/results/tammes_pullback.json.

Usage: python benchmarks/tammes_pullback.py [--pairs 3:130,16:1000,64:1000,512:2500,64:10000,512:10000]
"""

import argparse
import json
import subprocess
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from gnc_jax._src.objectives import TAMMES
from gnc_jax._src.sphere import normalize_columns
from search_step_costs import pair_list  # beside this script: d:K pairs, checked by argparse

OUT = Path(__file__).resolve().parent / "results" / "tammes_pullback.json"
AUTODIFF = TAMMES._replace(pullback=None)


def step_of(problem, offsets):
    return jax.jit(jax.vmap(lambda W, t: problem.value_and_grad({"W": W}, offsets, t), (0, None)))


def seconds(steps, W, rounds: int = 5):
    """Per step, the fastest of ``rounds`` timings of each step, interleaved (drift cancels); each
    timing runs the step for 0.2 s at least."""
    best = [float("inf")] * len(steps)
    for _ in range(rounds):
        for i, step in enumerate(steps):
            calls, start = 0, time.perf_counter()
            while calls == 0 or time.perf_counter() - start < 0.2:
                jax.block_until_ready(step(W[None], 1e-2))
                calls += 1
            best[i] = min(best[i], (time.perf_counter() - start) / calls)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pairs", type=pair_list, default="3:130,16:1000,64:1000,512:2500,64:10000,512:10000"
    )
    args = parser.parse_args()
    jax.config.update("jax_enable_x64", True)
    rows = []
    for d, K in args.pairs:
        W = normalize_columns(jax.random.normal(jax.random.key(0), (d, K), jnp.float64))
        offsets = TAMMES.smoothing_offsets(jnp.ones(K, bool))
        steps = [step_of(problem, offsets) for problem in (AUTODIFF, TAMMES)]
        g_two, g_one = (np.asarray(step(W[None], 1e-2)[1]["W"][0]) for step in steps)  # compiles
        two, one = seconds(steps, W)
        rel = float(np.max(np.abs(g_one - g_two)) / np.max(np.abs(g_two)))
        rows.append(
            dict(
                d=d,
                K=K,
                autodiff_s=round(two, 6),
                one_product_s=round(one, 6),
                speedup=round(two / one, 2),
                max_rel_diff=rel,
            )
        )
        print(rows[-1], flush=True)
    git = ["git", "rev-parse", "--short", "HEAD"]
    commit = subprocess.run(git, capture_output=True, text=True, cwd=OUT.parent).stdout.strip()
    OUT.write_text(
        json.dumps({"rows": rows, "commit": commit, "cpu_devices": jax.device_count()}, indent=1) + "\n"
    )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
