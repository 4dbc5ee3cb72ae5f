"""The Tammes search against the development set of best-known codes (d = 3, K = 15..130).

Four parts, all written to benchmarks/results/tammes_search.json (and a table, tammes_search.md):

* ``--part dev``: for every K of ``shared/reference/tammes_d3_dev.csv``, one fresh process runs
  ``gnc-jax solve tammes --d 3 --K K`` with default settings; we record its whole-process wall time
  (start-up and compilation included), the certified min angle, the best-known angle, success (reached
  to 1e-6 deg or above) and the issue's time budget (60 s for K <= 64, 180 s for K <= 130).
  Configurations above the best-known value by more than 1e-6 deg are kept under results/records/.
* ``--part curve``: success against budget. :func:`gnc_jax._src.search.search_tammes` records the best exact
  angle after every gain (its ``history``), so one long run per (population, moves, seed) gives the
  success at every round budget; the table lists, per population and move cap, the fraction of
  (K, seed) runs that reached the best-known angle within 10, 20, 50 and 100 rounds.

* ``--part higher``: both problems at the given d (default 4..8) and K (default 50, 64), one fresh
  default ``gnc-jax solve`` process per (problem, d, K): certified value against the table's best,
  status and whole-process time against the issue's budget where it states one.
* ``--part seeds``: default settings, one fresh process per (K, seed) (``--d`` one d, default 3;
  ``--seeds``): the min angle against the best code of the committed table (or the development
  set where K is in it), whole-process time and the checkout's commit: success across seeds, the
  held-out proxy.
* ``--part population``: the restart axis, the knob that scales on accelerators. One fresh
  ``gnc-jax solve`` process per population size (``--knob search-population``: the search's
  population; ``--knob restarts``: the annealer's restarts, for pairs the search does not run) with
  an optional ``--time-limit``: certified value against the best row of the table's stores
  (gnc_jax/data/codes.csv), rounds run, the search's time at its last round (its set-up, the
  symmetric starts and the initial population, included) and whole-process time, on the device the
  process sees (rows are kept per device).

Usage: python benchmarks/tammes_search.py --part dev [--K 15,20]
       python benchmarks/tammes_search.py --part seeds --K 20,33 --seeds 0,1,2
       python benchmarks/tammes_search.py --part curve
       python benchmarks/tammes_search.py --part higher [--d 4,8] [--K 50,64]
       python benchmarks/tammes_search.py --part population --problem tammes --d 3 --K 122 \
           --populations 32,4096 [--knob search-population] [--time-limit 60]
"""

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "reference" / "tammes_d3_dev.csv"
RESULTS = ROOT / "benchmarks" / "results"
OUT = RESULTS / "tammes_search.json"


def dev_rows():
    with open(DEV) as f:
        return [(int(r["K"]), float(r["best_known_min_angle_deg"])) for r in csv.DictReader(f)]


def checkout_commit(repo=ROOT) -> str:
    """The short commit of the checkout at ``repo`` ('' outside a git checkout): a row's provenance."""
    git = ["git", "rev-parse", "--short", "HEAD"]
    return subprocess.run(git, capture_output=True, text=True, cwd=repo).stdout.strip()


def load():
    return json.loads(OUT.read_text()) if OUT.exists() else {}


def save(data):
    OUT.write_text(json.dumps(data, indent=1) + "\n")


def solve_cli(problem, d, K, *extra, timeout=None, cache="", repo=None):
    """One fresh ``gnc-jax solve`` process (``python -m gnc_jax``, the same program as the
    ``gnc-jax`` script) with default settings: its JSON solution, whole-process wall time (start-up
    and compilation included) and its last search progress line. ``cache``: the command's
    compilation cache folder ('': off, as in a first run); ``repo``: the checkout whose gnc_jax runs
    (None: the installed one)."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    env["GNC_JAX_CACHE_DIR"] = cache
    if repo is not None:
        env["PYTHONPATH"] = str(repo)
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "gnc_jax", "solve", problem, "--d", str(d), "--K", str(K), "--format", "json"]
        + list(extra),
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
        env=env,
        cwd=repo,
    )
    wall = time.perf_counter() - t
    log = [line for line in out.stderr.splitlines() if line.startswith("search")][-1:]
    return json.loads(out.stdout.strip().splitlines()[-1]), wall, log


def search_fields(sol):
    """How the pair's search ended (``search_stopped_by``, ``_rounds``, ``_restarts``, ``_work``,
    ``_budget`` of its JSON row; none where no search ran)."""
    return {k: v for k, v in sol.items() if k.startswith("search_")}


def solve_tammes_cli(d, K, *extra):
    """:func:`solve_cli` for a Tammes pair, with its configuration (``--save`` into a temporary folder)."""
    with tempfile.TemporaryDirectory() as folder:
        sol, wall, log = solve_cli("tammes", d, K, *extra, "--save", folder)
        W = np.load(Path(folder) / f"tammes_d{d}_K{K}.npy")
    return sol, wall, log, W


def keep_record(W, name):
    """A configuration above the best value we know, kept under results/records/."""
    (RESULTS / "records").mkdir(exist_ok=True)
    np.save(RESULTS / "records" / name, W)


def part_higher(ds, Ks):
    """Both problems with default settings at the given d and K: certified values against the best of
    the table's stores and whole-process time (the budget: 60 s for d <= 8 and K <= 64, 180 s for
    d = 3 and K <= 130; none stated above)."""
    data = load()
    rows = {(r["problem"], r["d"], r["K"]): r for r in data.get("higher", [])}
    best = {problem: table_best(problem)[1] for problem in ("tammes", "softmax-code")}
    for d in ds:
        for K in Ks:
            for problem, score in (("tammes", "min_angle_deg"), ("softmax-code", "rho_one_vs_rest")):
                sol, wall, _ = solve_cli(problem, d, K)
                row = {"problem": problem, "d": d, "K": K, "score": score, "value": sol[score]}
                row |= {"table_best": best[problem].get((d, K)), "status": sol["status"]}
                row |= {"wall_s": round(wall, 1), "budget_s": time_budget(d, K)}
                rows[(problem, d, K)] = row
                print(json.dumps(row), flush=True)
                data["higher"] = [rows[k] for k in sorted(rows)]
                save(data)
    write_table(data)


def time_budget(d, K):
    """The issue's whole-process budget in seconds for a pair, or None where it states none."""
    if d <= 8 and K <= 64:
        return 60
    return 180 if d == 3 and K <= 130 else None


def device_kind():
    """The device a fresh process's JAX computes on (asked in a child process: in this one JAX would
    take the accelerator's memory from the solves)."""
    code = "import jax; print(jax.devices()[0].device_kind)"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def table_best(problem):
    """The score column of ``problem`` and {(d, K): its best certified value in the table's stores}."""
    from gnc_jax import store

    col, _ = store.SCORE[problem]
    from gnc_jax._src.known import TABLE

    rows = store.read_rows(TABLE)
    return col, {(r["d"], r["K"]): r[col] for r in rows if r["problem"] == problem}


def part_population(problem, d, Ks, populations, knob, time_limit, timeout):
    """The restart axis: one fresh process per population size, on the device this machine has."""
    score, table = table_best(problem)
    device = device_kind()
    data = load()
    key = lambda r: tuple(r[k] for k in ("device", "problem", "d", "K", "knob", "size", "time_limit"))
    rows = {key(r): r for r in data.get("population", [])}
    for K in Ks:
        best = table.get((d, K))
        for P in populations:
            extra = [f"--{knob}", str(P)] + (["--time-limit", str(time_limit)] if time_limit else [])
            row = {"device": device, "problem": problem, "d": d, "K": K, "knob": knob, "size": P}
            row |= {"time_limit": time_limit, "score": score, "table_best": best}
            try:
                sol, wall, log = solve_cli(problem, d, K, *extra, timeout=timeout)
            except subprocess.TimeoutExpired:
                row |= {"value": None, "wall_s": None, "timed_out": timeout}
            else:
                m = re.search(r"round (\d+)/\d+ .*?, ([\d.]+) s,", log[0]) if log else None
                rounds, search_s = (int(m[1]), float(m[2])) if m else (None, None)
                row |= {"value": sol[score], "status": sol["status"], "wall_s": round(wall, 1)}
                row |= {"rounds": rounds, "search_s": search_s}
            rows[key(row)] = row
            print(json.dumps(row), flush=True)
            data["population"] = list(rows.values())
            save(data)
    write_table(data)


def part_dev(Ks):
    data = load()
    rows = {r["K"]: r for r in data.get("dev", [])}
    for K, best_known in dev_rows():
        if Ks and K not in Ks:
            continue
        sol, wall, log, W = solve_tammes_cli(3, K)
        angle = sol["min_angle_deg"]
        row = {
            "K": K,
            "best_known_deg": best_known,
            "found_deg": angle,
            "difference_deg": angle - best_known,
            "reached": angle >= best_known - 1e-6,
            "record": angle > best_known + 1e-6,
            "wall_s": round(wall, 1),
            "budget_s": time_budget(3, K),
            "status": sol["status"],
            "rounds_log": log,
        } | search_fields(sol)
        if row["record"]:
            keep_record(W, f"tammes_d3_K{K}.npy")
        rows[K] = row
        print(json.dumps(row), flush=True)
        data["dev"] = [rows[k] for k in sorted(rows)]
        save(data)
    write_table(data)


def part_seeds(d, Ks, seeds, work_per_member=None):
    """Default settings (or another ``--search-work-per-member``), one fresh process per (K, seed): the
    min angle against the table's best code and against the development set where K is in it,
    whole-process time."""
    _, table = table_best("tammes")
    data, best, dev = load(), {k: float(v) for (dd, k), v in table.items() if dd == d}, {}
    dev = dict(dev_rows()) if d == 3 else {}
    rows = {(r["d"], r["K"], r["seed"], r.get("work_per_member") or 0): r for r in data.get("seeds", [])}
    commit = checkout_commit() or None
    budget = ("--search-work-per-member", str(work_per_member)) if work_per_member else ()
    for K in Ks:
        for seed in seeds:
            sol, wall, log, W = solve_tammes_cli(d, K, "--seed", str(seed), *budget)
            reference = max(best.get(K, 0.0), dev.get(K, 0.0))
            angle = sol["min_angle_deg"]
            if angle > reference + 1e-6:
                suffix = f"_work_per_member_{work_per_member}" if work_per_member else ""
                keep_record(W, f"tammes_d{d}_K{K}_seed{seed}{suffix}.npy")
            rows[(d, K, seed, work_per_member or 0)] = row = {
                "d": d,
                "K": K,
                "seed": seed,
                "found_deg": angle,
                "reference_deg": reference,
                "reference": "development set" if K in dev else "table best",
                "reached": angle >= reference - 1e-6,
                "above": angle > reference + 1e-6,
                "wall_s": round(wall, 1),
                "rounds_log": log,
                "commit": commit,
            } | search_fields(sol)
            if work_per_member:
                row["work_per_member"] = work_per_member
            print(json.dumps(row), flush=True)
            data["seeds"] = [rows[k] for k in sorted(rows)]
            save(data)


def part_curve(Ks, populations, moves, seeds, rounds):
    import jax

    from gnc_jax._src.process import tune_allocator
    from gnc_jax._src.search import SearchSettings, search_tammes

    tune_allocator()  # as the gnc-jax command does

    targets = dict(dev_rows())
    data = load()
    runs = []
    for P in populations:
        for m in moves:
            for K in Ks:
                for seed in seeds:
                    s = SearchSettings(population=P, max_moves=m, rounds=rounds, patience=rounds)
                    s = s.replace(work_per_member=10**9)  # the rounds end it, not the budget
                    res = search_tammes(3, K, jax.random.key(seed), s)
                    first = next((h for h in res.history if h[2] >= targets[K] - 1e-6), None)
                    run = {
                        "population": P,
                        "max_moves": m or f"auto ({s.moves_for(K)})",
                        "K": K,
                        "seed": seed,
                        "first_round": first[0] if first else None,
                        "first_s": round(first[1], 1) if first else None,
                        "best_deg": res.history[-1][2],
                        "s_per_round": round(res.elapsed_s / max(res.rounds, 1), 3),
                    }
                    runs.append(run)
                    print(json.dumps(run), flush=True)
    data["curve"] = {"Ks": Ks, "seeds": seeds, "rounds": rounds, "runs": runs}
    save(data)
    write_table(data)


def write_table(data):
    lines = ["# Tammes search against the d = 3 development set", ""]
    if "dev" in data:
        dev = data["dev"]
        hit = sum(r["reached"] for r in dev)
        in_time = sum(r["wall_s"] <= r["budget_s"] for r in dev)
        lines += [
            f"Default settings, one fresh `gnc-jax solve tammes --d 3 --K K` process per K: reached {hit} of "
            f"{len(dev)}, within the time budget {in_time} of {len(dev)}.",
            "",
            "| K | best known (deg) | found (deg) | difference | reached | wall s (budget) |",
            "|---|---|---|---|---|---|",
        ]
        for r in dev:
            lines.append(
                f"| {r['K']} | {r['best_known_deg']:.9f} | {r['found_deg']:.9f} | "
                f"{r['difference_deg']:+.1e} | "
                f"{'yes' if r['reached'] else 'no'}{' (record)' if r['record'] else ''} | "
                f"{r['wall_s']} ({r['budget_s']}) |"
            )
    if "higher" in data:
        rows = data["higher"]
        timed = [r for r in rows if r.get("budget_s")]
        in_time = sum(r["wall_s"] <= r["budget_s"] for r in timed)
        lines += [
            "",
            "Other d and K, default settings, one fresh `gnc-jax solve PROBLEM --d D --K K` process per "
            f"row: within the time budget {in_time} of the {len(timed)} rows that have one.",
            "",
            "| problem | d | K | certified | table's best | difference | status | wall s (budget) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            ref = r.get("table_best")
            ref_text, diff = ("-", "-") if ref is None else (f"{ref:.9f}", f"{r['value'] - ref:+.1e}")
            lines.append(
                f"| {r['problem']} | {r['d']} | {r['K']} | {r['score']} {r['value']:.9f} | {ref_text} | "
                f"{diff} | {r['status']} | {r['wall_s']} ({r.get('budget_s') or '-'}) |"
            )
    if "population" in data:
        lines += [
            "",
            "The restart axis (`--part population`): one fresh `gnc-jax solve` process per size of the knob, "
            "against the best row of the table's stores.",
            "",
            "| device | problem | d | K | knob | size | time limit s | certified | table's best | rounds | "
            "search s | wall s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in data["population"]:
            value = "timed out" if r["value"] is None else f"{r['value']:.9f}"
            best = "-" if r["table_best"] is None else f"{r['table_best']:.9f}"
            lines.append(
                f"| {r['device']} | {r['problem']} | {r['d']} | {r['K']} | {r['knob']} | {r['size']} | "
                f"{r['time_limit'] or '-'} | {value} | {best} | {r.get('rounds') or '-'} | "
                f"{r.get('search_s') or '-'} | {r['wall_s'] or r.get('timed_out')} |"
            )
    if "curve" in data:
        c = data["curve"]
        lines += [
            "",
            f"Success against budget: fraction of runs (K in {c['Ks']}, seeds {c['seeds']}) that reached the "
            "best-known angle within the given rounds.",
            "",
            "| population | max moves | 10 rounds | 20 | 50 | 100 | s per round (mean) |",
            "|---|---|---|---|---|---|---|",
        ]
        groups = {}
        for r in c["runs"]:
            groups.setdefault((r["population"], str(r["max_moves"]).split(" ")[0]), []).append(r)
        for (P, m), runs in groups.items():
            frac = [
                np.mean([r["first_round"] is not None and r["first_round"] <= b for r in runs])
                for b in (10, 20, 50, 100)
            ]
            lines.append(
                f"| {P} | {m} | " + " | ".join(f"{f:.2f}" for f in frac) + f" | "
                f"{np.mean([r['s_per_round'] for r in runs]):.2f} |"
            )
    (RESULTS / "tammes_search.md").write_text("\n".join(lines) + "\n")


def int_list(text):
    """'4,5,6' -> [4, 5, 6] (argparse reports a bad one by the argument's name)."""
    return [int(x) for x in text.split(",")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=["dev", "curve", "higher", "population", "seeds"], required=True)
    ap.add_argument(
        "--K",
        type=int_list,
        help="dev: only these K; curve: the K (default 35,50,60); higher: 50,64; population: 122",
    )
    ap.add_argument(
        "--d", type=int_list, default=None, help="higher: dimensions (default 4..8); population: one d (3)"
    )
    ap.add_argument("--populations", type=int_list, default=None, help="curve: 8,16,32; population: 32,4096")
    ap.add_argument("--problem", choices=["tammes", "softmax-code"], default="tammes", help="population")
    ap.add_argument("--knob", choices=["search-population", "restarts"], default="search-population")
    ap.add_argument("--time-limit", type=float, default=None, help="population: the solve's --time-limit")
    ap.add_argument("--timeout", type=float, default=None, help="population: seconds a process at most")
    ap.add_argument("--moves", type=int_list, default=[3, 0], help="0: the default max(6, K // 8)")
    ap.add_argument("--seeds", type=int_list, default=[0, 1])
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument(
        "--work-per-member",
        type=int,
        default=None,
        help="seeds: the search budget (default: the solver default)",
    )
    a = ap.parse_args()
    if a.work_per_member is not None and a.work_per_member < 1:
        ap.error("argument --work-per-member: must be at least 1")
    if a.part == "dev":
        part_dev(a.K)
    elif a.part == "seeds":
        part_seeds(a.d[0] if a.d else 3, a.K or [20, 33, 47, 58], a.seeds, a.work_per_member)
    elif a.part == "higher":
        part_higher(a.d or [4, 5, 6, 7, 8], a.K or [50, 64])
    elif a.part == "population":
        if a.d is not None and len(a.d) != 1:
            ap.error("argument --d: population takes one d")
        d = a.d[0] if a.d else 3
        populations = a.populations or [32, 4096]
        part_population(a.problem, d, a.K or [122], populations, a.knob, a.time_limit, a.timeout)
    else:
        part_curve(a.K or [35, 50, 60], a.populations or [8, 16, 32], a.moves, a.seeds, a.rounds)


if __name__ == "__main__":
    main()
