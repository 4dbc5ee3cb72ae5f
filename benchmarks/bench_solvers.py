"""Batched solver vs the same solver per instance in a Python loop vs pymanopt TrustRegions.

All three minimise the same smoothed Tammes objective (log-sum-exp of the pairwise cosines) with the
same continuation in the temperature, for d = 3, K = 24. Per-instance times: the batched call solves
1024 restarts at once (its compilation included; JAX's one-time runtime start-up is done before any
timing); the loop calls the same solver with 1 restart per call;
pymanopt runs TrustRegions on the Oblique manifold, warm-started through the same temperatures.
Then: wall time against K (d = 8, K = 16..1024) and against the batch size.

Writes benchmarks/results/solvers.json, or solvers_<N>dev.json with --host-devices N (N XLA CPU
devices, one per core, the restart axis sharded over them).
Usage: python benchmarks/bench_solvers.py [--quick] [--host-devices N]
"""

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

if "--host-devices" in sys.argv:  # must be set before JAX starts
    n = sys.argv[sys.argv.index("--host-devices") + 1]
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={int(n)}"

import jax
import jax.numpy as jnp
import numpy as np

import gnc_jax
from gnc_jax._src.cli import settings_from_options
from gnc_jax._src import batch
from gnc_jax._src.process import tune_allocator

jax.config.update("jax_enable_x64", True)  # the pymanopt-style baseline below runs in float64 too
tune_allocator()  # as the gnc-jax command does

OUT = Path(__file__).parent / "results"
T0, T1, STAGES = 0.1, 1e-6, 11  # pymanopt continuation: 11 temperatures, 0.1 -> 1e-6
ANNEAL = dict(
    steps=2000, t_start=T0, t_end=T1, hop_rounds=0, polish_steps=1, polish_t_end=T1, lp_polish_iters=0
)


def batched(d, K, restarts, seed=0, **kw):
    batch._bucket_solver.cache_clear()  # compile time included
    t = time.perf_counter()
    s = gnc_jax.solve_tammes(
        d, K, seed=seed, **settings_from_options("tammes", ANNEAL | kw | {"restarts": restarts})
    )
    return time.perf_counter() - t, s


def loop(d, K, n):
    batch._bucket_solver.cache_clear()
    t = time.perf_counter()
    angles = [
        gnc_jax.solve_tammes(
            d, K, seed=i, **settings_from_options("tammes", ANNEAL | {"restarts": 1})
        ).min_angle_deg
        for i in range(n)
    ]
    return (time.perf_counter() - t) / n, max(angles)


def pymanopt_per_instance(d, K, n):
    import pymanopt
    from pymanopt.optimizers import TrustRegions

    manifold = pymanopt.manifolds.Oblique(d, K)
    mask = ~np.eye(K, dtype=bool)
    times, angles = [], []
    for i in range(n):
        X = np.asarray(gnc_jax._src.sphere.random_points(jax.random.key(i), d, K))
        t = time.perf_counter()
        for temp in np.geomspace(T0, T1, STAGES):

            @pymanopt.function.jax(manifold)
            def cost(W, temp=temp):
                G = jnp.where(mask, W.T @ W, -jnp.inf)
                return temp * jax.nn.logsumexp(G / temp)

            problem = pymanopt.Problem(manifold, cost)
            X = TrustRegions(verbosity=0, max_iterations=30).run(problem, initial_point=X).point
        times.append(time.perf_counter() - t)
        angles.append(gnc_jax.min_angle_deg(X))
    return float(np.mean(times)), max(angles)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--host-devices", type=int, default=None)
    ap.add_argument("--skip-scaling", action="store_true", help="only the head-to-head comparison")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    res = {
        "meta": {
            "device": str(jax.devices()[0]),
            "n_devices": jax.device_count(),
            "cpu": platform.processor() or platform.machine(),
            "gnc_jax": gnc_jax.__version__,
        },
        "anneal_settings": ANNEAL,
        "pymanopt_continuation": [T0, T1, STAGES],
    }
    # Start JAX's runtime once (not charged to any solver); every measured call still compiles.
    gnc_jax.solve_tammes(
        2, 3, seed=0, **settings_from_options("tammes", ANNEAL | {"restarts": 1, "steps": 2})
    )
    d, K, R = 3, 24, (64 if args.quick else 1024)
    wall, s = batched(d, K, R)
    res["batched"] = {
        "d": d,
        "K": K,
        "restarts": R,
        "wall_s": wall,
        "per_instance_s": wall / R,
        "best_angle_deg": s.min_angle_deg,
        "hits_1e-9": s.hits,
    }
    t_loop, a_loop = loop(d, K, 4 if args.quick else 16)
    res["loop"] = {"per_instance_s": t_loop, "best_angle_deg": a_loop}
    t_pm, a_pm = pymanopt_per_instance(d, K, 1 if args.quick else 3)
    res["pymanopt"] = {"per_instance_s": t_pm, "best_angle_deg": a_pm}
    res["speedup_vs_loop"] = t_loop / (wall / R)
    res["speedup_vs_pymanopt"] = t_pm / (wall / R)
    print(
        json.dumps(
            {k: res[k] for k in ("batched", "loop", "pymanopt", "speedup_vs_loop", "speedup_vs_pymanopt")},
            indent=1,
        )
    )
    name = "solvers.json" if args.host_devices is None else f"solvers_{args.host_devices}dev.json"

    def save():  # after every stage: an interrupted run keeps what it measured
        tmp = OUT / (name + ".tmp")
        tmp.write_text(json.dumps(res, indent=1))
        tmp.replace(OUT / name)

    save()
    if args.skip_scaling:
        return

    res["scaling_K"] = []
    for K in [16, 64] if args.quick else [16, 32, 64, 128, 256, 512, 1024]:
        wall, s = batched(8, K, 8, steps=500)
        res["scaling_K"].append({"d": 8, "K": K, "restarts": 8, "steps": 500, "wall_s": wall})
        save()
        print("K", K, f"{wall:.2f}s", flush=True)
    res["scaling_batch"] = []
    for R in [16, 64] if args.quick else [16, 64, 256, 1024, 4096]:
        wall, s = batched(3, 24, R)
        res["scaling_batch"].append(
            {"d": 3, "K": 24, "restarts": R, "wall_s": wall, "per_instance_s": wall / R}
        )
        save()
        print("R", R, f"{wall:.2f}s", flush=True)


if __name__ == "__main__":
    main()
