"""Pairs stacked in one compiled search round against one pair at a time: the same sweep command.

Runs ``gnc-jax sweep tammes --d D --K K0:K1 --search-population P --search-stack S`` in a fresh
process for S = 1 (one pair at a time, unpadded, the default) and for the given stack sizes, each
into a store of its own, and records the whole command's wall time per pair and every pair's
certified min angle, beside the committed table's best and the development set's best-known angle
where the pair has one. The population per pair is given, so every pair gets the same work budget
in each mode (the default population, 16 per CPU core, would be divided among the stack).

Results: benchmarks/results/search_stack.json (rows appended per device and command).

``--population 0`` leaves the population at the device's default (divided among a stack); ``--no-baseline``
skips S = 1 (on an accelerator, where one pair at a time with the default population takes minutes a
pair); ``--keep DIR`` keeps each command's store.

Usage: python benchmarks/search_stack.py [--d 3] [--K 57:65] [--stacks 8] [--population 32]
       [--no-baseline] [--keep DIR] [--out FILE]
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tammes_search import DEV, RESULTS, dev_rows, device_kind, table_best

OUT = RESULTS / "search_stack.json"


def run(d, Ks, stack, population, keep=None):
    """One fresh sweep process: its wall time and {K: min angle}."""
    from gnc_jax import store

    with tempfile.TemporaryDirectory() as tmp:
        name = f"stack{stack}_d{d}_K{Ks.replace(':', '-').replace(',', '_')}.csv"
        out = Path(tmp) / "codes.csv" if keep is None else keep / name  # kept as its rows finish
        cmd = [
            sys.executable,
            "-m",
            "gnc_jax",
            "sweep",
            "tammes",
            "--d",
            str(d),
            "--K",
            Ks,
            "--out",
            str(out),
        ]
        if population:
            cmd += ["--search-population", str(population)]
        cmd += ["--search-stack", str(stack), "--quiet"]
        t = time.perf_counter()
        subprocess.run(cmd, check=True)
        wall = time.perf_counter() - t
        shown = " ".join(cmd[3:]).replace(str(out), "STORE.csv")
        return wall, {r["K"]: r["min_angle_deg"] for r in store.read_rows(out)}, shown


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=3)
    ap.add_argument("--K", default="57:65", help="a range K0:K1 (end exclusive), as gnc-jax takes it")
    ap.add_argument("--stacks", default="8", help="stack sizes to compare with 1, e.g. 4,8")
    ap.add_argument("--population", type=int, default=32, help="per pair; 0: the device's default")
    ap.add_argument("--no-baseline", action="store_true", help="skip the stack of 1")
    ap.add_argument("--keep", type=Path, help="keep each command's store in this folder")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    _, table = table_best("tammes")
    dev = dict(dev_rows()) if args.d == 3 and DEV.exists() else {}
    rows = json.loads(args.out.read_text()) if args.out.exists() else []
    device = device_kind()
    stacks = [int(s) for s in args.stacks.split(",")]
    for stack in stacks if args.no_baseline else [1, *stacks]:
        wall, angles, command = run(args.d, args.K, stack, args.population, args.keep)
        row = {"device": device, "d": args.d, "K": args.K, "stack": stack, "population": args.population}
        row |= {"command": f"gnc-jax {command}", "wall_s": round(wall, 1)}
        row |= {"wall_per_pair_s": round(wall / len(angles), 1)}
        row["pairs"] = [
            {"K": K, "min_angle_deg": a, "table_best": table.get((args.d, K)), "dev_best_known": dev.get(K)}
            for K, a in sorted(angles.items())
        ]
        print(json.dumps({k: v for k, v in row.items() if k != "pairs"}), flush=True)
        for p in row["pairs"]:
            print("  ", json.dumps(p), flush=True)
        rows.append(row)
        args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
