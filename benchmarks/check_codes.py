"""Spot check of the table of codes against an independent recomputation from the saved configurations.

For a seeded random choice of rows it recomputes, from the .npy file alone and without gnc_jax's
geometry: the min angle from the Gram matrix in numpy (chord formula), and every one-vs-rest distance
with quadprog's dual active-set QP (a different algorithm from gnc_jax's Wolfe iteration), and compares
them with the stored values. Every row whose (d, K) has a proven or best-known Tammes value in
shared/reference is compared with it as well. Writes benchmarks/results/codes_check.json.

    python benchmarks/check_codes.py [--n 10] [--seed 0] [STORE ...]
"""

import argparse
import csv
import json
import os
from pathlib import Path

import numpy as np
import quadprog

from gnc_jax import store

HERE = Path(__file__).parent
DEFAULT = sorted((HERE / "results" / "table").glob("*.csv"))  # the table of codes
REFERENCE = HERE.parents[0] / "tests" / "data" / "tammes_known.csv"


def min_angle(W):
    G = W.T @ W
    i, j = np.triu_indices(W.shape[1], 1)
    chord = np.sqrt(np.maximum(2 - 2 * G[i, j], 0))
    return float(np.degrees(2 * np.arcsin(chord.min() / 2)))


def distance_qp(W, k):
    """min over the simplex of ||w_k - W_rest v||: quadprog (a 1e-12 ridge makes G definite) picks the
    support, then the least-squares problem on the support's affine hull is solved exactly (KKT system);
    the refined weights are checked to be feasible."""
    rest = np.delete(W, k, axis=1)
    m = rest.shape[1]
    G = rest.T @ rest + 1e-12 * np.eye(m)
    a = rest.T @ W[:, k]
    C = np.hstack([np.ones((m, 1)), np.eye(m)])  # sum v = 1 (equality), v >= 0
    b = np.r_[1.0, np.zeros(m)]
    v = quadprog.solve_qp(G, a, C, b, meq=1)[0]
    S = np.flatnonzero(v > 1e-9)
    R = rest[:, S]
    kkt = np.block([[R.T @ R, np.ones((len(S), 1))], [np.ones((1, len(S))), np.zeros((1, 1))]])
    sol = np.linalg.lstsq(kkt, np.r_[R.T @ W[:, k], 1.0], rcond=None)[0]
    vs = sol[:-1]
    if vs.min() >= -1e-12:
        return float(np.linalg.norm(W[:, k] - R @ vs))
    return float(np.linalg.norm(W[:, k] - rest @ v))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("stores", nargs="*", default=DEFAULT)
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rows = store.best(store.load(args.stores))
    rng = np.random.default_rng(args.seed)
    picks = [rows[i] for i in sorted(rng.choice(len(rows), size=min(args.n, len(rows)), replace=False))]
    checks = []
    for r in picks:
        W = store.load_config(r["source"], r)["W"].astype(np.float64)
        angle = min_angle(W)
        rho = min(distance_qp(W, k) for k in range(W.shape[1])) if W.shape[1] > 2 else None
        checks.append(
            {
                "problem": r["problem"],
                "d": r["d"],
                "K": r["K"],
                "min_angle_stored": r["min_angle_deg"],
                "min_angle_numpy": angle,
                "rho_stored": r["rho_one_vs_rest"],
                "rho_quadprog": rho,
                "angle_difference": angle - r["min_angle_deg"],
                "rho_difference": None if rho is None else rho - r["rho_one_vs_rest"],
            }
        )
    with open(REFERENCE) as f:
        ref = {(int(x["d"]), int(x["K"])): x for x in csv.DictReader(f)}
    versus = []
    for r in rows:
        x = ref.get((r["d"], r["K"]))
        if r["problem"] == "tammes" and x is not None:
            diff = r["min_angle_deg"] - float(x["min_angle_deg"])
            versus.append(
                {
                    "d": r["d"],
                    "K": r["K"],
                    "ours": r["min_angle_deg"],
                    "reference": float(x["min_angle_deg"]),
                    "difference": diff,
                    "proven": x["proven_optimal"] == "1",
                }
            )
    out = {
        "stores": [os.path.relpath(s, HERE.parent) for s in args.stores],
        "spot_checks": checks,
        "max_abs_angle_difference": max(abs(c["angle_difference"]) for c in checks),
        "max_abs_rho_difference": max(
            abs(c["rho_difference"]) for c in checks if c["rho_difference"] is not None
        ),
        "reference_rows": len(versus),
        "reference_matched_1e-6_deg": sum(abs(v["difference"]) <= 1e-6 for v in versus),
        "reference_misses": [v for v in versus if abs(v["difference"]) > 1e-6],
    }
    (HERE / "results" / "codes_check.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "spot_checks"}, indent=2))
    for c in checks:
        rd = "-" if c["rho_difference"] is None else f"{c['rho_difference']:.1e}"
        print(
            f"{c['problem']:>12} d={c['d']} K={c['K']:>2}  angle {c['min_angle_stored']:.10f} "
            f"(numpy diff {c['angle_difference']:.1e})  rho {c['rho_stored']:.10f} (quadprog diff {rd})"
        )


if __name__ == "__main__":
    main()
