"""Cross-seed stores of codes: where a stored configuration beats the best stored code of a problem on
that problem's own score, solve that pair again with the configuration as a seed.

    python benchmarks/cross_seed_stores.py TAMMES_STORE SOFTMAX_STORE [STORE ...] --out CROSS_STORE \
        [--seeds-from OLDER_STORE ...]     # the table's: docs/table.md

The seeds are the other problem's codes (a Tammes code whose certified one-vs-rest margin is larger than
the stored softmax code's margin, or a softmax code whose certified min angle is larger than the stored
Tammes code's), the codes of ``--seeds-from`` stores (e.g. an older table, whose rows do not count as
results: their configurations are solved again, so every row of the result has this version's
statuses), a best row whose status is ``failed`` (its own configuration), and, at a trade-off pair
(each problem's code better on its own score), each code for the other problem, unless that code was
itself solved from this problem's code. A seed joins the pair's solve as an initial configuration
(``solve_pairs(..., initial=...)``, search off, 8 restarts): it competes with the annealer's result
before the exact polish, which can only improve it. The new rows go to ``--out`` (a store of both
problems; its rows count as results, and each names its seed in ``settings``), so ``gnc-jax table
--best`` over the stores gives, for every pair, a code at least as good as any configuration they
hold. Rerun until it finds nothing to do: each (pair, seed) is solved once. Prints each pair with
the stored value, the seed's and the new one.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import gnc_jax
from gnc_jax._src.cli import settings_from_options
from gnc_jax import store
from gnc_jax._src.sweep import Instance, _row, row_provenance

OTHER = {"tammes": "softmax-code", "softmax-code": "tammes"}
SCORE = {p: store.SCORE[p][0] for p in OTHER}  # the column each problem maximises


def seed_name(row: dict) -> str:
    """A stored configuration's name: its store's directory and file name, and its config path."""
    path = Path(row["source"])
    return f"{path.parent.name}/{path.name}:{row['config']}"


def seeded_from(row: dict, problem: str) -> bool:
    """Whether ``row`` came from a seeded solve whose seed was a code of ``problem``."""
    name = json.loads(row["settings"]).get("seeded_with") or ""
    return Path(name.rpartition(":")[2]).name.startswith(f"{problem}_d")


def pairs_to_reseed(results: list[dict], seeds: list[dict], tol: float) -> list[tuple[dict, dict]]:
    """(best result row, seed row) for every problem and pair where a configuration of ``results`` or
    ``seeds`` scores higher on the problem's score than its best result row by more than ``tol``, the
    best row itself where its status is ``failed``, and both ways at every trade-off pair of ``results``
    (not from a code that was itself solved from a code of this problem: that exchange never ends)."""
    best = {(r["problem"], r["d"], r["K"]): r for r in store.best(results) if r["problem"] in SCORE}
    pool = defaultdict(list)
    for r in results + seeds:
        pool[r["d"], r["K"]].append(r)
    out = []
    for (problem, d, K), row in sorted(best.items()):
        col, ocol = SCORE[problem], SCORE[OTHER[problem]]
        rival = max(pool[d, K], key=lambda r: r[col])
        other = best.get((OTHER[problem], d, K))
        if rival[col] > row[col] + tol:
            out.append((row, rival))
        elif row["status"] == "failed":  # an inner solver failed: solve again from the row's own code
            out.append((row, row))
        elif (
            other is not None
            and other[ocol] > row[ocol] + tol
            and other[col] < row[col] - tol
            and not seeded_from(other, problem)  # else an exchange that never ends (docs/table.md)
        ):
            out.append((row, other))
    return out


OVERRIDES = dict(restarts=8, search_rounds=0)  # a seeded solve: the seed and 8 restarts, search off


def solve_seeded(st: store.ResultsStore, problem: str, d: int, K: int, W, name: str, seed: int):
    """Solve (problem, d, K) with ``W`` as an initial configuration, store the certified row in ``st``
    (its settings name the seed ``name``) and return the solution."""
    sol = gnc_jax.solve_pairs(
        problem, [(d, K)], seed=seed, initial={(d, K): W}, **settings_from_options(problem, OVERRIDES)
    )[0]
    settings = json.dumps({"seed": seed, "seeded_with": name, **OVERRIDES}, sort_keys=True)
    inst = Instance(problem, d, K)
    config = st.save_config(st.unused_stem(inst.stem()), {"W": sol.W})
    st.append([_row(inst, sol, config, row_provenance(seed, settings))])
    return sol


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("stores", nargs="+", help="result stores")
    ap.add_argument("--out", required=True, help="store of the new rows (read as a result store too)")
    ap.add_argument("--seeds-from", nargs="*", default=[], help="stores whose configurations only seed")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tol", type=float, default=1e-9, help="least gain worth a new solve")
    args = ap.parse_args()
    with store.ResultsStore(args.out) as st:
        results = store.load(args.stores) + [r | {"source": args.out} for r in st.rows]
        done = {(r["problem"], r["d"], r["K"], json.loads(r["settings"]).get("seeded_with")) for r in st.rows}
        todo = pairs_to_reseed(results, store.load(args.seeds_from), args.tol)
        solved = 0
        for row, seed in todo:
            problem, d, K = row["problem"], row["d"], row["K"]
            if (problem, d, K, seed_name(seed)) in done:
                continue
            W = store.load_config(seed["source"], seed)["W"]
            sol = solve_seeded(st, problem, d, K, W, seed_name(seed), args.seed)
            solved += 1
            col = SCORE[problem]
            new = getattr(sol, col)
            assert new >= seed[col] - 1e-9, (problem, d, K, new, seed[col])  # the seed competed
            print(
                f"{problem:<12} d={d} K={K:<3} {col}: stored {row[col]:.10f}, seed {seed[col]:.10f} "
                f"({seed_name(seed)}), new {new:.10f} ({sol.status}, {sol.wall_s:.1f} s)",
                flush=True,
            )
    print(f"{solved} solved of {len(todo)} to reseed ({time.strftime('%H:%M:%S')}); rerun until none")


if __name__ == "__main__":
    main()
