"""Cross-seed two stores of codes: where one problem's configuration beats the other problem's stored
code on the other problem's own score, solve that pair again with the configuration as a seed.

    python benchmarks/cross_seed_stores.py benchmarks/results/codes.csv benchmarks/results/codes_softmax.csv \
        --out benchmarks/results/codes_cross.csv

A Tammes code whose certified one-vs-rest margin is larger than the stored softmax code's margin (or a
softmax code whose certified min angle is larger than the stored Tammes code's), and at a trade-off pair
(each code better on its own score) each code for the other problem, joins the pair's solve
as an initial configuration (``solve_pairs(..., initial=...)``, search off, 8 restarts): it competes with
the annealer's result before the exact polish, which can only improve it. The new rows go to ``--out``
(a store of both problems, with its own settings), so ``gnc-jax table --best`` over the three stores
gives, for every pair, a code at least as good as any configuration either search found. Resumable: pairs
already in ``--out`` are skipped. Prints each pair with the stored value, the seed's and the new one.
"""

from __future__ import annotations

import argparse
import json
import time

import gnc_jax
from gnc_jax import store
from gnc_jax._src.sweep import Instance, _row, row_provenance

SCORE = {"tammes": "min_angle_deg", "softmax-code": "rho_one_vs_rest"}
OTHER = {"tammes": "softmax-code", "softmax-code": "tammes"}


def pairs_to_reseed(rows: list[dict], tol: float) -> list[tuple[dict, dict]]:
    """(stored row, other problem's row) for every pair whose other-problem configuration scores higher
    on this problem's score by more than ``tol``, and both ways for every trade-off pair (each code better
    on its own score: the rival is polished on this problem's objective, which may lift it above)."""
    best = {(r["problem"], r["d"], r["K"]): r for r in store.best(rows) if r["problem"] in SCORE}
    out = []
    for (problem, d, K), row in sorted(best.items()):
        other = best.get((OTHER[problem], d, K))
        if other is None:
            continue
        col, ocol = SCORE[problem], SCORE[OTHER[problem]]
        if other[col] > row[col] + tol or (other[ocol] > row[ocol] + tol and other[col] < row[col] - tol):
            out.append((row, other))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("stores", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tol", type=float, default=1e-9, help="least gain worth a new solve")
    args = ap.parse_args()
    todo = pairs_to_reseed(store.load(args.stores), args.tol)
    overrides = dict(restarts=8, search_rounds=0)
    with store.ResultsStore(args.out) as st:
        done = st.finished()
        for row, other in todo:
            problem, d, K = row["problem"], row["d"], row["K"]
            inst = Instance(problem, d, K)
            if store.row_key(inst._asdict()) in done:
                continue
            W = store.load_config(other["source"], other)["W"]
            sol = gnc_jax.solve_pairs(problem, [(d, K)], seed=args.seed, initial={(d, K): W}, **overrides)[0]
            col = SCORE[problem]
            settings = json.dumps(
                {"seed": args.seed, "cross_seeded_from": OTHER[problem], **overrides}, sort_keys=True
            )
            provenance = row_provenance(args.seed, settings)
            config = st.save_config(inst.stem(), {"W": sol.W})
            st.append([_row(inst, sol, config, provenance)])
            new = getattr(sol, col)
            assert new >= other[col] - 1e-9, (problem, d, K, new, other[col])  # the seed competed
            print(
                f"{problem:<12} d={d} K={K:<3} {col}: stored {row[col]:.10f}, seed {other[col]:.10f}, "
                f"new {new:.10f} ({sol.status}, {sol.wall_s:.1f} s)",
                flush=True,
            )
    print(f"{len(todo)} pairs reseeded or already there ({time.strftime('%H:%M:%S')})")


if __name__ == "__main__":
    main()
