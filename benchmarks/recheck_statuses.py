"""The table's best rows of one status, re-judged by the current polish (read-only).

One polish iteration from each row's stored configuration (softmax codes with the exact features of
eq. (9), as the solver starts its polish): ``stationary`` if the LP finds no decrease there, else
``max_steps`` (a step would be taken), or ``failed``. Prints the counts per problem; writes nothing.

    python benchmarks/recheck_statuses.py [--status stalled]
"""

import argparse
import collections
import time

import numpy as np

import gnc_jax
from gnc_jax._src import objectives, polish, store
from gnc_jax._src.known import TABLE


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--status", default="stalled", help="the stored status whose rows are re-judged")
    args = ap.parse_args()
    rows = store.load([TABLE])
    chosen = [r for r in rows if r["status"] == args.status]
    print(f"{len(rows)} best rows: {dict(collections.Counter(r['status'] for r in rows))}")
    if not chosen:
        return
    residuals = [r["residual"] for r in chosen]
    print(f"{len(chosen)} read {args.status}, residuals {min(residuals):.1e} to {max(residuals):.1e}")
    t0, counts = time.perf_counter(), collections.Counter()
    for r in chosen:
        W = store.load_config(r["source"], r)["W"]
        params = {"W": W}
        if r["problem"] == "softmax-code":
            H = gnc_jax.optimal_features(W)
            params["H"] = np.where(np.isnan(H), W, H)
        res = polish.polish(objectives.get_problem(r["problem"]), params, max_iter=1)
        counts[(r["problem"], str(res.status))] += 1
    for (problem, status), n in sorted(counts.items()):
        print(f"{problem}: {n} now {status}")
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
