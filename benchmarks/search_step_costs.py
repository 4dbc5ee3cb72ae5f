"""The wall cost of the search's two kinds of step on this machine, against the work budget's prices.

The search's budget (:meth:`gnc_jax._src.search.SearchSettings.budget`) counts member-steps (one
anneal step of one member) and prices a Newton step of the interior-point finish by its flops
(:func:`gnc_jax._src.search.newton_step_cost`). This measures both, vmapped over a population of 32
as in the search (compiled once, then the mean of 3 calls): 300 anneal steps and 80 Newton steps
from random configurations, and prints the measured cost of a Newton step in member-steps beside
the price. Results: benchmarks/results/search_step_costs.json.

Usage: python benchmarks/search_step_costs.py [--pairs 3:64,3:130] [--out FILE]
"""

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp

from gnc_jax._src.driver import geometric, retract, riemannian_adam, run_schedule
from gnc_jax._src.interior import interior_point
from gnc_jax._src.objectives import TAMMES
from gnc_jax._src.search import newton_step_cost
from gnc_jax._src.sphere import normalize_columns

OUT = Path(__file__).resolve().parent / "results" / "search_step_costs.json"
POPULATION, ANNEAL_STEPS, NEWTON_STEPS = 32, 300, 80


def seconds(f, X):
    """Mean wall time of the compiled, vmapped f over X (3 calls after one that compiles)."""
    g = jax.jit(jax.vmap(f))
    g(X).block_until_ready()
    t = time.perf_counter()
    for _ in range(3):
        g(X).block_until_ready()
    return (time.perf_counter() - t) / 3


def measure(d, K):
    col = jnp.ones(K, bool)
    offsets = TAMMES.smoothing_offsets(col)
    opt = riemannian_adam({"W": col})
    temps = geometric(1e-3, 1e-9, ANNEAL_STEPS)

    def anneal(X):
        value_and_grad = lambda p, t: TAMMES.value_and_grad(p, offsets, t)
        return run_schedule(value_and_grad, {"W": X}, opt, retract, temps, 0.5 * temps).params["W"]

    X = normalize_columns(jax.random.normal(jax.random.key(0), (POPULATION, d, K), jnp.float64))
    anneal_s = seconds(anneal, X)
    newton_s = seconds(lambda X: interior_point(X, NEWTON_STEPS), X)
    measured = (newton_s / NEWTON_STEPS) / (anneal_s / ANNEAL_STEPS)
    return {
        "d": d,
        "K": K,
        "population": POPULATION,
        f"anneal_{ANNEAL_STEPS}_steps_s": round(anneal_s, 4),
        f"newton_{NEWTON_STEPS}_steps_s": round(newton_s, 4),
        "newton_step_measured_member_steps": round(measured, 2),
        "newton_step_price_member_steps": round(newton_step_cost(d, K), 2),
        "device": jax.devices()[0].device_kind,
    }


def pair_list(text):
    """'3:64,3:130' -> [(3, 64), (3, 130)] (argparse reports a bad one by the argument's name)."""
    try:
        pairs = [tuple(int(x) for x in p.split(":")) for p in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected d:K pairs like 3:64,3:130, got {text!r}") from None
    if any(len(p) != 2 or p[0] < 2 or p[1] < 2 for p in pairs):
        raise argparse.ArgumentTypeError(f"expected d:K pairs with d, K >= 2, got {text!r}")
    return pairs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=pair_list, default=[(3, 64), (3, 130)], help="d:K pairs, e.g. 3:64,3:130")
    ap.add_argument("--out", type=Path, default=OUT, help="the JSON file the rows go to")
    args = ap.parse_args()
    jax.config.update("jax_enable_x64", True)
    rows = [measure(d, K) for d, K in args.pairs]
    for row in rows:
        print(json.dumps(row), flush=True)
    args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
