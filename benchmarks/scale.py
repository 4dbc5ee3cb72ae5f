"""The paper's regime, K >> d: whole-process time, peak memory and certified codes with default settings.

For each (d, K) and each problem of ``--problems`` (both by default), ``gnc-jax solve PROBLEM --d d
--K K --seed 0 --save DIR`` runs in a fresh process (wall time and the process's peak resident
memory from ``os.wait4``); the saved configuration is certified again here, independently of the
run's own report (max cos, and the one-vs-rest margin's certified bracket), next to the first K
points of the Kerdock code where d is 4, 16 or 64 (max cos 1/sqrt(d)) and the LP bound on max cos.
With ``--annealer``, the annealer alone at the first pair under several budgets of restarts x steps
(docs/decisions.md, "The annealer's work limit"). Rows are appended to the JSON file as they finish;
a rerun runs only the problems a pair's row lacks. With ``--codes DIR`` each saved configuration is
kept as ``DIR/{problem}_d{d}_K{K}_seed0.npy`` (float64, the file the row was certified from).

On an accelerator the child also reports its device's peak memory (``peak_bytes_in_use``) and each
row names the device; the parent certifies on the same device, so set
``XLA_PYTHON_CLIENT_PREALLOCATE=false`` there (else the parent's JAX holds 75% of the memory while
the next child runs).

Usage: python benchmarks/scale.py [--pairs 64:1000] [--problems tammes,softmax-code] [--annealer]
       [--codes DIR] [--out FILE]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import gnc_jax
from gnc_jax import theory

OUT = Path(__file__).parent / "results" / "scale.json"
# ``python -m gnc_jax`` (its allocator tuning, then its main), then the device it ran on and, on an
# accelerator, that device's peak memory, as the last line of stdout.
CHILD = """
import json, sys, jax
from gnc_jax._src.cli import main
from gnc_jax._src.process import tune_allocator
tune_allocator()
rc = main(sys.argv[1:])
device = jax.devices()[0]
report = {"device": device.device_kind}
stats = device.memory_stats() or {}
if "peak_bytes_in_use" in stats:
    report["device_peak_gib"] = stats["peak_bytes_in_use"] / 2**30
print(json.dumps(report))
sys.exit(rc)
"""
GNC = [sys.executable, "-c", CHILD]
BUDGETS = [  # (label, SolverSettings fields) for --annealer
    ("1 x 3000, no hops", dict(restarts=1, hop_rounds=0)),
    ("1 x 9000", dict(restarts=1)),
    ("8 x 432", dict(restarts=8, steps=216, hop_steps=108, polish_steps=108)),
]


def run_process(cmd) -> tuple[float, float, str]:
    """(wall s, peak RSS GiB, stdout) of one command in a fresh process."""
    t = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(cmd, stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{cmd} failed")
        out.seek(0)
        return wall, usage.ru_maxrss / 2**20, out.read()


def certified(W: np.ndarray) -> dict:
    sep = gnc_jax.separation(W)
    return {
        "max_cos": gnc_jax.max_cos(W),
        "rho_upper": float(sep.rho_one_vs_rest),
        "rho_lower": float(sep.rho_lower),
    }


def pair_row(d: int, K: int, problems, codes: Path | None) -> dict:
    row = {"d": d, "K": K, "lp_max_cos_bound": theory.max_cos_lower_bound(d, K)}
    if d in (4, 16, 64) and d * (d + 2) >= K:
        row["kerdock_subset"] = certified(theory.kerdock_code(d)[:, :K])
    for problem in problems:
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [*GNC, "solve", problem, "--d", str(d), "--K", str(K), "--seed", "0", "--save", tmp]
            wall, rss, stdout = run_process(cmd)
            saved = next(Path(tmp).glob("*.npy"))
            W = np.load(saved)
            if codes is not None:
                codes.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(saved, codes / f"{problem.replace('-', '_')}_d{d}_K{K}_seed0.npy")
        command = f"gnc-jax solve {problem} --d {d} --K {K} --seed 0 --save DIR"
        row[problem] = certified(W) | {"wall_s": wall, "peak_rss_gib": rss, "command": command}
        row[problem] |= json.loads(stdout.splitlines()[-1])  # the child's device and its peak
        row[problem]["ratio_to_bound"] = (1 - row[problem]["max_cos"]) / (1 - row["lp_max_cos_bound"])
        print(json.dumps({problem: row[problem]}), flush=True)
    return row


def annealer_rows(d: int, K: int) -> list[dict]:
    import jax

    from gnc_jax._src.driver import solve_pair
    from gnc_jax._src.objectives import TAMMES

    rows = []
    for label, fields in BUDGETS:
        s = gnc_jax.SolverSettings(**fields)
        t = time.perf_counter()
        with jax.enable_x64(True):
            res = jax.jit(lambda k, s=s: solve_pair(TAMMES, s, d, K, k, d, K))(jax.random.key(0))
            W = np.asarray(res.params["W"])
        rows.append({"budget": label, "settings": fields, "wall_s": time.perf_counter() - t} | certified(W))
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", default="64:1000", help="d:K,d:K,...")
    ap.add_argument("--annealer", action="store_true", help="also the annealer's budgets at the first pair")
    ap.add_argument("--problems", default="tammes,softmax-code", help="of tammes, softmax-code")
    ap.add_argument("--codes", type=Path, help="keep each certified configuration in this folder")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    problems = args.problems.split(",")
    if not set(problems) <= {"tammes", "softmax-code"}:
        ap.error(f"--problems: tammes and/or softmax-code, got {args.problems!r}")
    data = json.loads(args.out.read_text()) if args.out.exists() else {"pairs": []}
    pairs = [tuple(map(int, item.split(":"))) for item in args.pairs.split(",")]
    rows = {(r["d"], r["K"]): r for r in data["pairs"]}
    for d, K in pairs:
        row = rows.get((d, K))
        missing = [p for p in problems if row is None or p not in row]
        if missing:
            if row is None:
                data["pairs"].append(pair_row(d, K, missing, args.codes))
            else:
                row.update(pair_row(d, K, missing, args.codes))
            args.out.write_text(json.dumps(data, indent=1) + "\n")
    if args.annealer and "annealer" not in data:
        d, K = pairs[0]
        data["annealer"] = {"d": d, "K": K, "rows": annealer_rows(d, K)}
        args.out.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
