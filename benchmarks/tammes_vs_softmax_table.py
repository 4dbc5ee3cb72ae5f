"""Tammes codes for d = 3, K = 15..130, and softmax codes beside Tammes codes (Theorem 3.7's conjecture).

Writes benchmarks/results/tammes_d3.json and benchmarks/results/softmax_vs_tammes.json, and renders
both as benchmarks/results/tables.md.
Usage: python benchmarks/tammes_vs_softmax_table.py [--quick | --render-only]
"""

import argparse
import json
import platform
import time
from pathlib import Path

import jax

import gnc_jax
from gnc_jax._src.cli import settings_from_options

OUT = Path(__file__).parent / "results"


def run(problem, pairs, **settings):
    t0 = time.perf_counter()
    sols = gnc_jax.solve_pairs(problem, pairs, seed=0, **settings_from_options(problem, settings))
    return sols, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small ranges (smoke test)")
    ap.add_argument("--render-only", action="store_true", help="only render tables.md from the JSON files")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.render_only:
        return render()
    meta = {
        "device": str(jax.devices()[0]),
        "cpu": platform.processor() or platform.machine(),
        "gnc_jax": gnc_jax.__version__,
    }

    # 1. Tammes d = 3, K = 15..130 (restarts and rounds below; hard K benefit from more).
    Ks = range(15, 21) if args.quick else range(15, 131)
    settings = dict(restarts=16, hop_rounds=2)
    sols, wall = run("tammes", [(3, K) for K in Ks], **settings)
    rows = [{k: v for k, v in s.summary().items()} for s in sols]
    (OUT / "tammes_d3.json").write_text(
        json.dumps({"meta": meta, "settings": settings, "total_s": wall, "rows": rows}, indent=1)
    )
    print(f"tammes d=3 K={Ks.start}..{Ks.stop - 1}: {wall:.0f} s")

    # 2. Softmax code vs Tammes code beyond Theorem 3.8's cases (K > d + 1, d >= 3).
    pairs = [(d, K) for d in (3, 4, 5) for K in range(d + 2, (12 if args.quick else 25))]
    sc, wall_sc = run("softmax-code", pairs, **settings)
    tm, wall_tm = run("tammes", pairs, **settings)
    rows = []
    for a, b in zip(sc, tm):
        rows.append(
            {
                "d": a.d,
                "K": a.K,
                "rho_softmax_code": a.rho_one_vs_rest,
                "rho_of_tammes_code": b.rho_one_vs_rest,
                "one_minus_maxcos_tammes": 1 - b.max_cos,
                "maxcos_of_softmax_code": a.max_cos,
                "maxcos_tammes": b.max_cos,
                "rattlers_softmax_code": a.n_rattlers,
                "rattlers_tammes": b.n_rattlers,
                "gap_sc": a.certificate_gap,
                "gap_tm": b.certificate_gap,
            }
        )
    (OUT / "softmax_vs_tammes.json").write_text(
        json.dumps({"meta": meta, "settings": settings, "total_s": wall_sc + wall_tm, "rows": rows}, indent=1)
    )
    print(f"softmax vs tammes: {len(pairs)} pairs, {wall_sc + wall_tm:.0f} s")
    render()


def render():
    """benchmarks/results/tables.md from the two JSON files."""
    t = json.loads((OUT / "tammes_d3.json").read_text())
    lines = [
        f"# Tammes codes, d = 3 (restarts {t['settings']['restarts']}, hop rounds "
        f"{t['settings']['hop_rounds']}, {t['total_s']:.0f} s in all on {t['meta']['device']})",
        "",
        "| K | min angle (deg) | max cos | rattlers | hits | status | certificate gap |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in t["rows"]:
        lines.append(
            f"| {r['K']} | {r['min_angle_deg']:.9f} | {r['max_cos']:.12f} | {r['n_rattlers']} | "
            f"{r['hits']}/{r['restarts']} | {r['status']} | {r['certificate_gap']:.1e} |"
        )
    c = json.loads((OUT / "softmax_vs_tammes.json").read_text())
    lines += [
        "",
        f"# Softmax code vs Tammes code ({c['total_s']:.0f} s in all)",
        "",
        "| d | K | rho softmax code | rho of Tammes code | 1 - max cos (Tammes) | max cos (softmax code) | "
        "rattlers SC / Tammes |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in c["rows"]:
        lines.append(
            f"| {r['d']} | {r['K']} | {r['rho_softmax_code']:.10f} | {r['rho_of_tammes_code']:.10f} | "
            f"{r['one_minus_maxcos_tammes']:.10f} | {r['maxcos_of_softmax_code']:.10f} | "
            f"{r['rattlers_softmax_code']} / {r['rattlers_tammes']} |"
        )
    (OUT / "tables.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
