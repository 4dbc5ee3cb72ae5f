"""How often a random start of the Tammes search's draw lands in the basin of the table's code.

Each start is drawn as the search draws a random member (Gaussian columns, normalised), annealed by
the log-sum-exp schedule given (t0 down to 1e-9, learning rate = factor x t, the draw's being
0.1:2000:0.5) and solved by 80 Newton steps of the interior-point finish. One JSON line per schedule:
the best start's and the median start's distance below the shipped table's min angle, and how many
starts reach it (1e-6 deg) or come within 0.01 and 0.1 deg (docs/results.md, "A probe of the draws
at d = 3").

    python benchmarks/draw_probe.py --d 3 --K 85 --starts 256 --schedules 0.1:2000:0.5,0.1:8000:0.5
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

import gnc_jax
from gnc_jax._src.neighbours import anneal_and_finish
from gnc_jax._src.sphere import normalize_columns


def probe(d: int, K: int, table: float, starts: int, seed: int, t0: float, steps: int, rate: float) -> dict:
    """The distances below ``table`` (the table's min angle, degrees) of ``starts`` random starts
    under one schedule."""
    t = time.perf_counter()
    X = normalize_columns(jax.random.normal(jax.random.key(seed), (starts, d, K), jnp.float64))
    _, angles = anneal_and_finish(np.asarray(X), t0, steps, rate)
    below = table - angles
    return {
        "d": d,
        "K": K,
        "schedule": f"{t0}:{steps}:{rate}",
        "starts": starts,
        "seed": seed,
        "table_deg": table,
        "best_below": float(below.min()),
        "median_below": float(np.median(below)),
        "reach": int(np.sum(below <= 1e-6)),
        "within_0.01": int(np.sum(below < 1e-2)),
        "within_0.1": int(np.sum(below < 0.1)),
        "s": round(time.perf_counter() - t, 1),
    }


def schedules(text: str) -> list[tuple[float, int, float]]:
    """``t0:steps:rate,...`` as (t0, steps, rate) triples, each positive."""
    try:
        out = [(float(a), int(b), float(c)) for a, b, c in (item.split(":") for item in text.split(","))]
    except ValueError:
        out = []
    if not out or not all(t0 > 0 and steps > 0 and rate > 0 for t0, steps, rate in out):
        raise argparse.ArgumentTypeError(f"--schedules must be t0:steps:rate,... with each > 0, got {text!r}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, required=True)
    parser.add_argument("--K", type=int, required=True)
    parser.add_argument("--starts", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--schedules", type=schedules, default="0.1:2000:0.5", help="t0:steps:rate,... (the draw's first)"
    )
    args = parser.parse_args()
    if args.starts < 1:
        parser.error(f"--starts must be >= 1, got {args.starts}")
    try:  # before any start is computed: a pair outside the table ends the run at once
        table = gnc_jax.known_code("tammes", args.d, args.K).min_angle_deg
    except ValueError as error:
        parser.error(str(error))
    for t0, steps, rate in args.schedules:
        row = probe(args.d, args.K, table, args.starts, args.seed, t0, steps, rate)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", True)
    main()
