"""The README's headline numbers, recomputed from the committed outputs (`make check-claims`).

Every claim is rendered here from the files in benchmarks/results/, rounded in the safe direction
(our margins and angles down, our times up, an interval outward, a competitor's value up), and must
appear in README.md word for word. Exit 1 with the claims that do not, 0 when all do.

    python benchmarks/check_claims.py [--print]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def down(x: float, digits: int) -> str:
    return f"{math.floor(x * 10**digits) / 10**digits:.{digits}f}"


def up(x: float, digits: int) -> str:
    return f"{math.ceil(x * 10**digits) / 10**digits:.{digits}f}"


def up_sci(x: float) -> str:
    """x rounded up to two significant digits, as 9.0e-15."""
    exponent = math.floor(math.log10(x))
    mantissa = math.ceil(x / 10**exponent * 10 - 1e-9) / 10
    if mantissa >= 10:  # 9.94e-15 rounds up to 1.0e-14, not 10.0e-15
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{mantissa:.1f}e{exponent:+03d}".replace("e-0", "e-").replace("e+0", "e")


def _json(name: str):
    return json.loads((RESULTS / name).read_text())


def table_claim() -> str:
    sys.path.insert(0, str(ROOT))
    from gnc_jax._src import store

    from gnc_jax._src.known import TABLE

    rows = store.read_rows(TABLE)
    pairs = {(r["d"], r["K"]) for r in rows}
    gap = max(r["certificate_gap"] for r in rows)
    return (
        f"{len(pairs)} (d, K) pairs, {len(rows)} certified codes, the best found per problem "
        f"(largest certificate gap {up_sci(gap)})"
    )


def development_set_claim() -> str:
    dev = _json("tammes_search.json")["dev"]
    low = [r["wall_s"] for r in dev if r["K"] <= 64]
    high = [r["wall_s"] for r in dev if r["K"] > 64]
    return (
        f"{sum(r['reached'] for r in dev)} of {len(dev)} development-set K reached with default settings "
        f"({math.floor(min(low))}–{math.ceil(max(low))} s for K ≤ 64, "
        f"{math.floor(min(high))}–{math.ceil(max(high))} s above)"
    )


def gpu_claim() -> str:
    rows = [r for r in _json("tammes_search.json")["population"] if r["problem"] == "tammes"]
    gpu = [r for r in rows if r["device"] != "cpu" and r["time_limit"] == 150.0]
    row, base = (next(r for r in gpu if r["size"] == size) for size in (4096, 32))
    cpu = next(r for r in rows if r["device"] == "cpu" and r["size"] == 32)
    return (
        f"population 4096 at (3, 122): {down(row['value'], 9)}° in {up(row['wall_s'], 1)} s whole "
        f"process on one {row['device']} (population 32: {down(base['value'], 9)}° in "
        f"{up(base['wall_s'], 1)} s there, {up(cpu['wall_s'], 1)} s on this CPU), above our previous "
        f"code ({up(row['table_best'], 9)}°)"
    )


def paper_claim() -> str:
    rows = _json("paper_baseline.json")["rows"]
    paper = next(r for r in rows if r["solver"].startswith("paper"))
    ours = next(r for r in rows if r["solver"].endswith("(defaults)"))
    return (
        f"certified ρ̂ {down(ours['rho'], 6)} in {up(ours['wall_s'], 1)} s against its "
        f"{up(paper['rho'], 6)} in {down(paper['wall_s'], 1)} s"
    )


def speed_claim() -> str:
    return f"{math.floor(_json('solvers.json')['speedup_vs_pymanopt'])}x faster per instance than pymanopt"


def scale_claim() -> str:
    s = _json("scale_face.json")
    code = s["softmax_code"]
    return (
        f"d = 512, K = 10,000 in {math.ceil(code['wall_s'] / 60)} min on this CPU, certified "
        f"ρ ∈ [{down(code['rho_lower'], 5)}, {up(code['rho_upper'], 5)}] against the reference "
        f"implementation's {up(s['reference_rho'], 4)}"
    )


def _scale_row(d: int, K: int) -> dict:
    return next(r for r in _json("scale.json")["pairs"] if (r["d"], r["K"]) == (d, K))


def large_k_claim() -> str:
    row = _scale_row(64, 1000)
    t, s = row["tammes"], row["softmax-code"]
    return (
        f"(64, 1000) in {math.ceil(t['wall_s'])} s (Tammes, max cos {up(t['max_cos'], 6)}) and "
        f"{math.ceil(s['wall_s'])} s (softmax code, "
        f"ρ ∈ [{down(s['rho_lower'], 6)}, {up(s['rho_upper'], 6)}]) "
        f"whole process, {up(max(t['peak_rss_gib'], s['peak_rss_gib']), 1)} GiB"
    )


def face_default_claim() -> str:
    row = _scale_row(512, 10_000)["softmax-code"]
    return (
        f"(512, 10,000) softmax code with defaults: {math.ceil(row['wall_s'])} s, "
        f"ρ ∈ [{down(row['rho_lower'], 6)}, {up(row['rho_upper'], 6)}], {up(row['peak_rss_gib'], 1)} GiB"
    )


def gpu_scale_claim() -> str:
    data = _json("scale_gpu.json")
    rows = {r["K"]: r["softmax-code"] for r in data["pairs"] if r["d"] == 512}
    one, big, slow = rows[10_000], rows[100_000], data["schedules"][0]
    dense = 100_000**2 * 8 / 2**30

    def rho(r):
        return f"ρ ∈ [{down(r['rho_lower'], 6)}, {up(r['rho_upper'], 6)}]"

    return (
        f"on one {one['device']}, defaults, whole process: (512, 10,000) softmax code in "
        f"{up(one['wall_s'], 1)} s ({rho(one)}, {up(one['device_peak_gib'], 1)} GiB on the device, "
        f"2026-12-04) and, with the defaults of 2026-11-27 (the CPU's work limit, the untied anneal), "
        f"(512, 100,000) in {up(big['wall_s'], 1)} s ({rho(big)}, {up(big['device_peak_gib'], 1)} GiB on "
        f"the device, where one K × K array would take {down(dense, 1)} GiB); one restart of "
        f"{slow['settings']['steps']} + {slow['settings']['polish_steps']} float64 steps: {rho(slow)} in "
        f"{up(slow['wall_s'], 1)} s (in-process)"
    )


def stack_claim() -> str:
    row = next(r for r in _json("search_stack.json") if r["device"] != "cpu" and "note" not in r)
    above = sum(p["min_angle_deg"] > p["table_best"] + 1e-9 for p in row["pairs"])
    equal = sum(abs(p["min_angle_deg"] - p["table_best"]) <= 1e-9 for p in row["pairs"])
    Ks = [p["K"] for p in row["pairs"]]
    return (
        f"the d = 3 Tammes sweep of K = {Ks[0]}..{Ks[-1]} stacked in one compiled search (`--search-stack "
        f"{row['stack']}`, default population): {up(row['wall_per_pair_s'], 1)} s a pair whole process "
        f"on one {row['device']}, {above} codes above the table it then shipped and {equal} equal (since "
        "merged)"
    )


CLAIMS = (
    table_claim,
    development_set_claim,
    gpu_claim,
    stack_claim,
    paper_claim,
    speed_claim,
    scale_claim,
    large_k_claim,
    face_default_claim,
    gpu_scale_claim,
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--print", action="store_true", help="print every claim as rendered")
    args = ap.parse_args(argv)
    readme = " ".join((ROOT / "README.md").read_text().split())  # line breaks read as spaces
    missing = []
    for claim in CLAIMS:
        text = claim()
        if args.print:
            print(f"{claim.__name__}: {text}")
        if text not in readme:
            missing.append(f"{claim.__name__}: README.md lacks {text!r}")
    for line in missing:
        print(line, file=sys.stderr)
    matched = len(CLAIMS) - len(missing)
    print(f"check-claims: {matched} of {len(CLAIMS)} README claims match the committed outputs")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
