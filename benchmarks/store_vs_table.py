"""One sweep store against the best row of every other store: how often a default reaches the best code
we know (the stand-in for the held-out best-known codes, docs/results.md).

Per row of STORE: the best row of the same (problem, d, K) in the OTHER stores and whether STORE's is
equal to it (within --tol degrees for Tammes codes, --tol as is for margins), above or below.

    python benchmarks/store_vs_table.py benchmarks/results/table46/codes_budget.csv \\
        gnc_jax/data/codes.csv [--tol 1e-6]
"""

import argparse
from collections import Counter

from gnc_jax import store


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store", help="the store judged")
    ap.add_argument("others", nargs="+", help="the stores it is judged against (STORE itself is skipped)")
    ap.add_argument("--tol", type=float, default=1e-6)
    args = ap.parse_args()
    others = [p for p in args.others if p != args.store]
    try:
        table = {store.row_key(r): r for r in store.best(store.load(others))}
        judged = store.best(store.load([args.store]))
    except store.StoreError as e:
        ap.error(str(e))
    verdicts = Counter()
    for r in judged:
        col, _ = store.SCORE[r["problem"]]
        rival = table.get(store.row_key(r))
        if rival is None:
            print(f"{r['problem']} d={r['d']} K={r['K']}: {r[col]:.9f} (no other row)")
            verdicts["new"] += 1
            continue
        diff = r[col] - rival[col]
        verdict = "equal" if abs(diff) <= args.tol else ("above" if diff > 0 else "below")
        verdicts[verdict] += 1
        print(f"{r['problem']} d={r['d']} K={r['K']}: {r[col]:.9f} {verdict} ({diff:+.1e})")
    print(", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())))


if __name__ == "__main__":
    main()
