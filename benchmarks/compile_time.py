"""Whole-process time of default Tammes solves, first run and run again with the compilation cache.

For each K, ``gnc-jax solve tammes --d 3 --K K --seed 0`` (default settings) runs twice in fresh
processes sharing a new, empty ``GNC_JAX_CACHE_DIR``: the first compiles every program (as on a new
machine), the second loads those the cache kept. Both give the same code (checked: the same min angle
to the last digit). ``--repo DIR`` runs another checkout's command instead (e.g. a ``git worktree`` of
an older commit, for a baseline on the same machine and day). Results: benchmarks/results/compile_time.json
(rows keyed by K and the checkout's commit).

Usage: python benchmarks/compile_time.py --K 60,110 [--repo DIR] [--first-only]
"""

import argparse
import json
import tempfile
from pathlib import Path

from tammes_search import checkout_commit, solve_cli

OUT = Path(__file__).resolve().parent / "results" / "compile_time.json"


def solve(repo: Path, K: int, cache: str) -> tuple[float, float]:
    """One fresh process: its min angle (deg) and whole-process wall time (s)."""
    sol, wall, _ = solve_cli("tammes", 3, K, "--seed", "0", "--quiet", cache=cache, repo=repo)
    return sol["min_angle_deg"], wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--K", required=True, help="comma-separated K")
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]))
    ap.add_argument("--first-only", action="store_true", help="the first run only")
    args = ap.parse_args()
    try:
        Ks = [int(k) for k in args.K.split(",")]
    except ValueError:
        ap.error(f"--K must be comma-separated integers, got {args.K!r}")
    repo = Path(args.repo).resolve()
    commit = checkout_commit(repo)
    rows = json.loads(OUT.read_text()) if OUT.exists() else []
    for K in Ks:
        with tempfile.TemporaryDirectory() as cache:
            angle, first = solve(repo, K, cache)
            row = {"K": K, "commit": commit, "min_angle_deg": angle}
            row["first_run_s"] = round(first, 1)
            if not args.first_only:
                again, second = solve(repo, K, cache)
                row |= {"run_again_s": round(second, 1), "same_code": again == angle}
        print(json.dumps(row), flush=True)
        rows = [r for r in rows if (r["K"], r["commit"]) != (K, row["commit"])] + [row]
        OUT.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
