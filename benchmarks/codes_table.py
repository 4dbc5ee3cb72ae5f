"""The gnc_jax table of codes: renders the table shipped with gnc_jax (or the given stores) as
benchmarks/results/codes.md. How the table was made: docs/table.md.

Per (d, K): the Tammes code's min angle, max cos and rattlers, the softmax code's certified rho and
rattlers, rho of the Tammes code, and Theorem 3.9's bounds where they apply. Per d: where the two codes
coincide (same rho to 1e-9), where one search found the better configuration for both criteria,
where rattlers occur, and whether the larger found rho (a lower bound on rho*) lies within the bounds.

    python benchmarks/codes_table.py [STORE ...] [--out FILE.md]
"""

import argparse
import json
from pathlib import Path

from gnc_jax import store, theory
from gnc_jax._src.known import TABLE

HERE = Path(__file__).parent / "results"
TOL = 1e-9


def ranges(ks):
    """[3, 4, 5, 9] -> '3-5, 9'."""
    out, ks = [], sorted(ks)
    i = 0
    while i < len(ks):
        j = i
        while j + 1 < len(ks) and ks[j + 1] == ks[j] + 1:
            j += 1
        out.append(str(ks[i]) if i == j else f"{ks[i]}-{ks[j]}")
        i = j + 1
    return ", ".join(out) or "none"


def cross_seeding(rows: list[dict], best: dict) -> list[str]:
    """What the rows of cross-seeding stores (``*cross*.csv``) added: the best rows they hold, by how
    much they beat the other stores' best, and what seeded them (``settings``: ``seeded_with``)."""

    def is_cross(r):
        return "cross" in Path(r["source"]).name

    cross = [r for r in rows if is_cross(r)]
    if not cross:
        return []
    rest = {(r["problem"], r["d"], r["K"]): r for r in store.best([r for r in rows if not is_cross(r)])}
    out = ["", "## Cross-seeding", ""]
    for problem in ("tammes", "softmax-code"):
        col = store.SCORE[problem][0]
        gains = sorted(
            (b[col] - rest[k][col], k[1:]) for k, b in best.items() if k[0] == problem and k in rest
        )
        gains = [g for g in gains if g[0] > TOL]
        top = ", ".join(f"{g:.2g} at {dk}" for g, dk in gains[::-1][:3])
        out.append(
            f"- {problem}: {len(gains)} pairs lifted above the other stores' best ({col}; largest {top})."
        )
    kinds = {"the format-1 table": 0, "earlier cross-seeded rows": 0, "the other stores": 0}
    for r in cross:
        seed = json.loads(r["settings"]).get("seeded_with", "")
        if "format1" in seed:
            kinds["the format-1 table"] += 1
        elif "cross" in seed:
            kinds["earlier cross-seeded rows"] += 1
        else:
            kinds["the other stores"] += 1
    out.append(
        f"- {len(cross)} cross-seeded rows, seeded from "
        + ", ".join(f"{k} ({v})" for k, v in kinds.items())
        + "."
    )
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("stores", nargs="*", default=[TABLE])
    ap.add_argument("--out", type=Path, default=HERE / "codes.md")
    args = ap.parse_args()
    rows = store.load(args.stores)
    best = {(r["problem"], r["d"], r["K"]): r for r in store.best(rows)}
    pairs = sorted({(d, K) for _, d, K in best})
    wall = sum(r["wall_s"] for r in rows)
    lines = [
        "# The gnc_jax table of codes",
        "",
        f"{len(rows)} rows from {len(args.stores)} store(s), the best of them per problem for {len(pairs)} "
        f"(d, K) pairs; solver wall time {wall / 3600:.2f} h in all (sum of the rows' wall_s), device "
        f"{rows[0]['device']}, gnc_jax {rows[0]['version']}.",
        "Values are the solver's certified float64 numbers (benchmarks/check_codes.py recomputes a sample",
        "independently from the saved configurations); `rattlers` counts points off the minimum (tolerance",
        "1e-6); rho(T) is the one-vs-rest margin of the Tammes code. Where the two codes differ, 'trade-off'",
        "lists the pairs where the configuration with the larger rho has the smaller min angle: the two",
        "criteria rank the two configurations in opposite order, so these are the candidates for pairs whose",
        "softmax and Tammes optima differ (not a proof: both searches may still be short of the optimum).",
        "Elsewhere the code that is worse on one criterion is worse on both: that search missed.",
        "",
        "## Per dimension",
        "",
        "| d | K | coincide | softmax code better | Tammes code better | Tammes rattlers at K | "
        "softmax-code rattlers at K | trade-off | found rho within Theorem 3.9 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    detail = [
        "",
        "## All pairs",
        "",
        "| d | K | Tammes min angle (deg) | Tammes max cos | rattlers | softmax code rho | min angle (deg) | "
        "rattlers | rho(T) | Thm 3.9 lower | upper |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    differ_head = [
        "",
        "## Pairs where the two problems differ",
        "",
        "The trade-off pairs: the configuration with the larger certified rho (the best one stored for the",
        "problem named) has the smaller certified min angle; statuses are the larger-rho code's / the",
        "other's. Candidates for pairs whose softmax and Tammes optima differ; a margin gain near the",
        "certification's precision (~1e-12) or a polish that ended `max_steps` is a candidate to recheck,",
        "not evidence.",
        "",
        "| d | K | larger rho from | its rho | its min angle (deg) | other rho | other min angle (deg) | "
        "rho gain | angle loss (deg) | statuses |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    differ = []
    for d in sorted({d for d, _ in pairs}):
        Ks = [K for dd, K in pairs if dd == d]
        same, sc_better, tm_better, tm_ratt, sc_ratt, tradeoff = [], [], [], [], [], []
        inside = applicable = 0
        for K in Ks:
            t, s = best.get(("tammes", d, K)), best.get(("softmax-code", d, K))
            if t is None or s is None:
                continue
            diff = s["rho_one_vs_rest"] - t["rho_one_vs_rest"]
            if abs(diff) <= TOL:
                same.append(K)
            elif diff > 0:
                sc_better.append(K)
            else:
                tm_better.append(K)
            angle_diff = s["min_angle_deg"] - t["min_angle_deg"]
            if abs(diff) > TOL and abs(angle_diff) > TOL and (diff > 0) != (angle_diff > 0):
                tradeoff.append(K)
                larger, other = (s, t) if diff > 0 else (t, s)
                differ.append(
                    f"| {d} | {K} | {larger['problem']} | {larger['rho_one_vs_rest']:.12f} | "
                    f"{larger['min_angle_deg']:.10f} | {other['rho_one_vs_rest']:.12f} | "
                    f"{other['min_angle_deg']:.10f} | {abs(diff):.1e} | {abs(angle_diff):.1e} | "
                    f"{larger['status']} / {other['status']} |"
                )
            if t["n_rattlers"]:
                tm_ratt.append(K)
            if s["n_rattlers"]:
                sc_ratt.append(K)
            lo = hi = None
            if theory.bounds_applicable(d, K):
                lo, hi = theory.softmax_code_bounds(d, K)
                applicable += 1
                rho = max(s["rho_one_vs_rest"], t["rho_one_vs_rest"])
                inside += lo <= rho <= hi
            detail.append(
                f"| {d} | {K} | {t['min_angle_deg']:.10f} | {t['max_cos']:.12f} | {t['n_rattlers']} | "
                f"{s['rho_one_vs_rest']:.12f} | {s['min_angle_deg']:.10f} | {s['n_rattlers']} | "
                f"{t['rho_one_vs_rest']:.12f} | " + ("- | - |" if lo is None else f"{lo:.4f} | {hi:.4f} |")
            )
        lines.append(
            f"| {d} | {min(Ks)}-{max(Ks)} | {len(same)} | {ranges(sc_better)} | {ranges(tm_better)} | "
            f"{ranges(tm_ratt)} | {ranges(sc_ratt)} | {ranges(tradeoff)} | {inside}/{applicable} |"
        )
    differ = differ_head + (differ or ["| none | | | | | | | | | |"])
    args.out.write_text("\n".join(lines + differ + cross_seeding(rows, best) + detail) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
