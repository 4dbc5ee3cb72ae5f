"""Sweeps: correct rows, resuming after SIGKILL, refusing conflicting settings, host shards, and the
`sweep`, `table` and `plot` commands."""

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import SEARCH_LEAN, known_tammes, replace_the_search, stand_in_search
from test_cli import run_cli

import gnc_jax
from gnc_jax import SearchSettings, SolverSettings
from gnc_jax._src import batch, store
from gnc_jax._src import sweep as sweep_module
from gnc_jax._src.search import SearchResult
from gnc_jax._src.status import Status
from gnc_jax._src.store import StoreError
from gnc_jax._src.sweep import grid, sweep
from gnc_jax._src.ufm import UFMSettings

BUDGET = SolverSettings(restarts=8, steps=600, hop_rounds=1)
CLI_BUDGET = ["--restarts", "8", "--steps", "600", "--hop-rounds", "1"]


def expected_angle(d, K):
    if d == 2:
        return 360.0 / K
    (r,) = [r for r in known_tammes() if (r["d"], r["K"]) == (d, K)]
    return r["angle"]


def check_rows(rows, pairs, store_path):
    """Every pair exactly once, at its known optimum, and its saved configuration gives the same
    certified numbers when recomputed from scratch."""
    keys = [store.row_key(r) for r in rows]
    assert sorted(keys) == sorted(("tammes", d, K, None, None) for d, K in pairs)
    for r in rows:
        assert abs(r["min_angle_deg"] - expected_angle(r["d"], r["K"])) < 1e-6, r
        W = store.load_config(store_path, r)["W"]
        assert W.shape == (r["d"], r["K"])
        # the angle recomputed independently of the package (numpy), the margin by the certifier
        G = W.T @ W / np.outer(np.linalg.norm(W, axis=0), np.linalg.norm(W, axis=0))
        cos = np.max(G[~np.eye(r["K"], dtype=bool)])
        assert np.degrees(np.arccos(cos)) == pytest.approx(r["min_angle_deg"], abs=1e-9)
        sep = gnc_jax.separation(W)
        assert float(sep.min_angle_deg) == pytest.approx(r["min_angle_deg"], abs=1e-12)
        assert float(sep.rho_one_vs_rest) == pytest.approx(r["rho_one_vs_rest"], abs=1e-12)
        assert r["seed"] == 0 and r["version"] == gnc_jax.__version__ and r["device"].startswith("cpu")
        assert json.loads(r["settings"])["restarts"] == 8
        assert r["status"] in {s.value for s in Status} and isinstance(r["residual"], float)


@pytest.mark.slow
def test_sweep_writes_resumes_and_refuses_other_settings(tmp_path):
    out = tmp_path / "codes.csv"
    pairs = [(2, K) for K in (3, 5, 6)] + [(3, 4), (3, 6)]
    rep = sweep("tammes", [2, 3], [3, 4, 5, 6], out=out, seed=0, batch_size=3, progress=None, solver=BUDGET)
    assert (rep.total, rep.solved, rep.skipped) == (8, 8, 0)
    rows = [r for r in store.read_rows(out) if (r["d"], r["K"]) in pairs]
    check_rows(rows, pairs, out)
    # Two batches in flight (the default) or one at a time: the same rows (written as their batches
    # finish, so not always in the same order).
    serial = tmp_path / "serial.csv"
    sweep(
        "tammes",
        [2, 3],
        [3, 4, 5, 6],
        out=serial,
        seed=0,
        batch_size=3,
        workers=1,
        progress=None,
        solver=BUDGET,
    )
    values = ["d", "K", "min_angle_deg", "rho_one_vs_rest", "rattlers"]
    assert sorted([r[c] for c in values] for r in store.read_rows(serial)) == sorted(
        [r[c] for c in values] for r in store.read_rows(out)
    )
    with pytest.raises(ValueError, match="workers"):
        sweep("tammes", [2], [3], out=serial, seed=0, workers=0, progress=None, solver=BUDGET)
    with pytest.raises(ValueError, match="release_memory must be True or False"):
        sweep("tammes", [2], [3], out=serial, seed=0, release_memory="yes", progress=None, solver=BUDGET)
    before = out.read_bytes()
    again = sweep("tammes", [2, 3], [3, 4, 5, 6], out=out, seed=0, progress=None, solver=BUDGET)
    assert (again.solved, again.skipped) == (0, 8) and out.read_bytes() == before
    # More pairs: only the new ones are solved.
    more = sweep("tammes", [2], [3, 4, 8], out=out, seed=0, progress=None, solver=BUDGET)
    assert (more.solved, more.skipped) == (1, 2)
    for bad in (dict(seed=1), dict(solver=BUDGET.replace(restarts=16))):
        with pytest.raises(StoreError, match="conflicting settings"):
            sweep("tammes", [2], [9], out=out, progress=None, **({"seed": 0, "solver": BUDGET} | bad))
    assert len(store.read_rows(out)) == 9
    # Another problem may share the store, with its own settings.
    sweep(
        "softmax-code",
        [2],
        [5],
        out=out,
        seed=0,
        progress=None,
        solver=SolverSettings(restarts=4, steps=600, hop_rounds=1),
    )
    (sc,) = [r for r in store.read_rows(out) if r["problem"] == "softmax-code"]
    assert sc["rho_one_vs_rest"] == pytest.approx(1 - np.cos(2 * np.pi / 5), abs=1e-9)


@pytest.mark.slow
def test_a_slow_pair_does_not_hold_back_the_other_workers_rows(tmp_path, monkeypatch):
    # Two workers, one pair per batch: while one worker is on a slow pair (K = 3, here waiting), the
    # other finishes K = 4 and then K = 5, and their rows reach the store before the slow one's.
    # Written in submission order instead, K = 4's row would wait for K = 3: the wait times out.
    out = tmp_path / "codes.csv"
    real_solve, seen = sweep_module._solve, []

    def solve(instances, *args, **kwargs):
        if instances[0].K == 3:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not seen:
                if out.exists() and len(store.read_rows(out)) == 2:
                    seen.append(sorted(r["K"] for r in store.read_rows(out)))
                time.sleep(0.05)
        return real_solve(instances, *args, **kwargs)

    monkeypatch.setattr(sweep_module, "_solve", solve)
    rep = sweep(
        "tammes", [2], [3, 4, 5], out=out, seed=0, batch_size=1, workers=2, progress=None, solver=BUDGET
    )
    assert seen == [[4, 5]] and rep.solved == 3
    assert sorted(r["K"] for r in store.read_rows(out)) == [3, 4, 5]


@pytest.mark.slow
def test_a_sweep_searches_a_stack_of_pairs_in_one_call(tmp_path, monkeypatch):
    # --search-stack 2: the batch holds both pairs (not the CPU's one per batch) and the search gets
    # them together, padded to 16 points; the rows are the proven optima, as one at a time.
    from gnc_jax._src import batch

    stacks, real_search = [], batch.search_stack
    monkeypatch.setattr(batch, "search_stack", lambda d, Ks, *a: stacks.append(Ks) or real_search(d, Ks, *a))
    out = tmp_path / "codes.csv"
    search = SEARCH_LEAN.replace(population=8, stack=2, rounds=6, symmetric_starts=0, init_steps=600)
    rep = sweep("tammes", [3], [13, 14], out=out, seed=0, progress=None, solver=BUDGET, search=search)
    assert rep.solved == 2 and stacks == [[13, 14]]
    rows = store.read_rows(out)
    check_rows(rows, [(3, 13), (3, 14)], out)
    for r in rows:  # how each search ended, as its solution reports it
        assert r["search_stopped_by"] in ("optimum", "rounds", "work", "patience")
        assert 1 <= r["search_rounds"] <= 6 and r["search_restarts"] >= 0
        assert 0 < r["search_work"] <= r["search_budget"]


def test_a_softmax_code_sweep_starts_from_the_stores_tammes_code(tmp_path, monkeypatch):
    # The store holds the shipped 14-point Tammes code (a search that stands in returns it); the
    # softmax-code sweep's own search stands in with random points and its annealer is short, so
    # alone it stays far below that code's margin. Into the same store it is at least that margin.
    code = gnc_jax.known_code("tammes", 3, 14).W
    found = SearchResult(code, gnc_jax.tammes_margin(code), 0, 0.0, False, "rounds", 1, 0, (), 0.0)
    solver = SolverSettings(restarts=2, steps=50, hop_rounds=0, lp_polish_iters=0)
    search = SEARCH_LEAN.replace(population=2, cross_seed=True)
    run = lambda problem, out: sweep(problem, [3], [14], out=out, progress=None, solver=solver, search=search)
    replace_the_search(monkeypatch, lambda d, Ks, *args: [found for _ in Ks])
    run("tammes", tmp_path / "both.csv")
    replace_the_search(monkeypatch, stand_in_search)
    run("softmax-code", tmp_path / "both.csv")
    monkeypatch.setattr(batch, "_LAST_TAMMES", [])  # kept from the run with the other stand-in
    run("softmax-code", tmp_path / "alone.csv")
    rows = {r["problem"]: r for r in store.read_rows(tmp_path / "both.csv")}
    alone = store.read_rows(tmp_path / "alone.csv")[0]
    assert alone["rho_lower"] < rows["tammes"]["rho_lower"] - 1e-2
    assert rows["softmax-code"]["rho_lower"] >= rows["tammes"]["rho_lower"] - 1e-12


def test_a_failed_rows_reason_is_kept_in_the_store(tmp_path, monkeypatch):
    # A pair whose inner solver failed is stored with the reason, not only the word ``failed``.
    real_solve = sweep_module._solve

    def solve(instances, *args, **kwargs):
        sols = real_solve(instances, *args, **kwargs)
        return [
            dataclasses.replace(s, status=Status.FAILED, status_note="LP polish: infeasible") for s in sols
        ]

    monkeypatch.setattr(sweep_module, "_solve", solve)
    out = tmp_path / "codes.csv"
    sweep("tammes", [2], [5], out=out, seed=0, progress=None, solver=BUDGET)
    (r,) = store.read_rows(out)
    assert (r["status"], r["status_note"]) == ("failed", "LP polish: infeasible")


@pytest.mark.slow
def test_sigkill_mid_sweep_then_resume(tmp_path):
    out = tmp_path / "codes.csv"
    args = ["sweep", "tammes", "--d", "2:4", "--K", "3:9", "--out", str(out), "--batch", "1", *CLI_BUDGET]
    cmd = [sys.executable, "-m", "gnc_jax", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if out.exists() and out.read_text().count("\n") >= 3:  # header + 2 rows
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the sweep finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed = len(store.read_rows(out))
    assert 2 <= killed < 12
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert f"{12 - killed} solved, {killed} already there" in res.stderr
    assert "ETA" in res.stderr
    pairs = [(d, K) for d in (2, 3) for K in range(3, 9)]
    check_rows(store.read_rows(out), pairs, out)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_hosts_write_shards_that_table_merges(tmp_path):
    """Two processes joined by jax.distributed (two simulated CPU devices each): each solves every
    second instance on its own devices and writes its shard; `table` reads them as one."""
    out = tmp_path / "codes.csv"
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    port = free_port()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gnc_jax",
                "sweep",
                "tammes",
                "--d",
                "2",
                "--K",
                "3:7",
                "--out",
                str(out),
            ]
            + ["--distributed", "--coordinator", f"127.0.0.1:{port}", "--process-count", "2"]
            + ["--process-index", str(i), "--quiet", *CLI_BUDGET],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-2000:]
    shards = sorted(tmp_path.glob("codes.part*of2.csv"))
    assert [s.name for s in shards] == ["codes.part0of2.csv", "codes.part1of2.csv"]
    parts = [store.read_rows(s) for s in shards]
    assert all(len(p) == 2 for p in parts)
    assert all(r["device"] == "cpu:2xcpu" and r["restarts"] == 8 for p in parts for r in p)
    merged = run_cli("table", *map(str, shards), "--format", "json")
    assert merged.returncode == 0, merged.stderr
    rows = [json.loads(line) for line in merged.stdout.splitlines()]
    assert [(r["d"], r["K"]) for r in rows] == [(2, K) for K in range(3, 7)]
    for r in rows:
        assert abs(r["min_angle_deg"] - 360 / r["K"]) < 1e-6


@pytest.mark.slow
def test_hardmax_and_ufm_rows_carry_features(tmp_path):
    out = tmp_path / "f.csv"
    sweep("hardmax", [2], [5], ns=[2], out=out, seed=0, progress=None, solver=BUDGET)
    sweep(
        "ufm",
        [3],
        [4],
        ns=[1],
        taus=[0.5, 0.1],
        out=out,
        seed=0,
        progress=None,
        solver=UFMSettings(restarts=2, steps=400),
    )
    rows = {store.row_key(r): r for r in store.read_rows(out)}
    hm = rows[("hardmax", 2, 5, 2, None)]
    assert hm["gnc2"] == pytest.approx(1 - np.cos(2 * np.pi / 5), abs=1e-9) and hm["gnc1"] < 1e-6
    assert store.load_config(out, hm)["H"].shape == (2, 10)
    for tau in (0.5, 0.1):
        r = rows[("ufm", 3, 4, 1, tau)]
        cfg = store.load_config(out, r)
        assert cfg["W"].shape == (3, 4) and cfg["H"].shape == (3, 4)
        assert r["loss"] > 0 and r["gnc3"] is not None and r["max_cos"] == pytest.approx(-1 / 3, abs=1e-4)
        # the gradient norm decided the status
        assert (r["status"] == "stationary") == (r["residual"] <= UFMSettings().grad_tol)


def test_grid_validation():
    assert len(grid("ufm", [2, 3], [4], [1, 2], [0.1])) == 4
    for args, match in [
        (("packing", [2], [3]), "problem"),
        (("tammes", [1], [3]), "d"),
        (("tammes", [2], []), "K"),
        (("tammes", [2], [3], [1]), "n does not apply to tammes"),
        (("ufm", [2], [3], [1]), "needs tau"),
        (("ufm", [2], [3], [1], [0.0]), "tau"),
    ]:
        with pytest.raises(ValueError, match=match):
            grid(*args)


@pytest.mark.slow
def test_table_filters_sorts_best_and_compares(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    sweep(
        "tammes",
        [2, 3],
        [4, 5],
        out=a,
        seed=0,
        progress=None,
        solver=SolverSettings(restarts=2, steps=100, hop_rounds=0),
    )
    sweep("tammes", [2, 3], [4, 5], out=b, seed=0, progress=None, solver=BUDGET)
    out = run_cli("table", str(a), "--d", "3", "--columns", "d,K,min_angle_deg", "--format", "csv")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "d,K,min_angle_deg" and len(out.stdout.splitlines()) == 3
    out = run_cli("table", str(a), str(b), "--best", "--format", "json")
    best = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(best) == 4
    for r in best:
        rows = [x for x in store.load([a, b]) if (x["d"], x["K"]) == (r["d"], r["K"])]
        assert r["min_angle_deg"] == max(x["min_angle_deg"] for x in rows)
    out = run_cli("table", str(a), str(b), "--sort", "min_angle_deg", "--descending", "--format", "json")
    angles = [json.loads(line)["min_angle_deg"] for line in out.stdout.splitlines()]
    assert angles == sorted(angles, reverse=True) and len(angles) == 8
    out = run_cli("table", str(a), "--compare", str(b), "--format", "json")
    cmp = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(cmp) == 4
    for c in cmp:
        assert c["other_minus_this"] == pytest.approx(c["other"] - c["this"])
        # Tammes: a larger min angle is better; the verdict follows from the two stored values, read
        # here from the stores themselves (not from the comparison's own columns).
        this = max(x["min_angle_deg"] for x in store.load([a]) if (x["d"], x["K"]) == (c["d"], c["K"]))
        other = max(x["min_angle_deg"] for x in store.load([b]) if (x["d"], x["K"]) == (c["d"], c["K"]))
        expected = (
            "equal" if abs(other - this) <= 1e-9 else ("other better" if other > this else "this run better")
        )
        assert (c["this"], c["other"], c["verdict"]) == (this, other, expected)
    assert "only in this run 0" in out.stderr
    table = run_cli("table", str(a))
    assert table.returncode == 0 and table.stdout.split()[:3] == ["problem", "d", "K"]


@pytest.mark.slow
def test_plot_writes_pictures(tmp_path):
    out = tmp_path / "s.csv"
    for problem in ("tammes", "softmax-code"):
        sweep(
            problem,
            [2, 3],
            [4, 5, 6],
            out=out,
            seed=0,
            progress=None,
            solver=SolverSettings(restarts=4, steps=600, hop_rounds=1),
        )
    res = run_cli("plot", str(out), "--out", str(tmp_path / "pics"))
    assert res.returncode == 0, res.stderr
    names = sorted(os.path.basename(p) for p in res.stdout.split())
    assert names == sorted(
        ["rho_vs_K.png", "angle_vs_K.png", "softmax_vs_tammes.png"]
        + [f"{p}_d2.png" for p in ("softmax-code", "tammes")]
        + [f"{p}_d3_K{K}.png" for p in ("softmax-code", "tammes") for K in (4, 5, 6)]
    )
    assert all((tmp_path / "pics" / n).stat().st_size > 5000 for n in names)
    # --html adds an interactive view of every d = 3 code drawn, beside its PNG
    res = run_cli("plot", str(out), "--out", str(tmp_path / "html"), "--html")
    assert res.returncode == 0, res.stderr
    html = sorted(os.path.basename(p) for p in res.stdout.split() if p.endswith(".html"))
    assert html == sorted(f"{p}_d3_K{K}.html" for p in ("softmax-code", "tammes") for K in (4, 5, 6))


@pytest.mark.parametrize(
    "args,match",
    [
        (["sweep", "tammes", "--d", "3", "--K", "5", "--out", "/proc/nope/s.csv"], "does not exist"),
        (["sweep", "tammes", "--d", "3", "--K", "5", "--out", "STORE", "--tau", "0.1"], "--tau does not"),
        (["sweep", "ufm", "--d", "3", "--K", "5", "--out", "STORE"], "needs --tau"),
        (["sweep", "tammes", "--d", "3", "--K", "9:4", "--out", "STORE"], "empty range"),
        (["sweep", "tammes", "--d", "3", "--K", "5", "--out", "STORE", "--process-index", "1"], "both"),
        (
            ["sweep", "tammes", "--d", "3", "--K", "5", "--out", "STORE"]
            + ["--process-index", "2", "--process-count", "2"],
            "must be <",
        ),
        (  # refused before jax.distributed.initialize (which would wait for a coordinator)
            ["sweep", "tammes", "--d", "3", "--K", "5", "--out", "STORE", "--distributed"]
            + ["--coordinator", "localhost:1", "--process-index", "2", "--process-count", "2"],
            "must be <",
        ),
        (["sweep", "tammes", "--d", "3", "--K", "5", "--out", "OLD"], "incompatible version"),
        (
            ["sweep", "softmax-code", "--d", "3", "--K", "5", "--out", "STORE", "--neighbours"],
            "only to the tammes",
        ),
        (["table", "STORE"], "no results store"),
        (["table", "OLD"], "incompatible version"),
        (["table", "GOOD", "--sort", "colour"], "unknown column"),
        (["table", "GOOD", "--columns", "d,colour"], "unknown column"),
        (["plot", "OLD"], "incompatible version"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path, args, match):
    old = tmp_path / "old.csv"
    old.write_text("d,K,angle\n3,5,90\n")
    good = tmp_path / "good.csv"
    with store.ResultsStore(good):
        pass
    subst = {"STORE": str(tmp_path / "s.csv"), "OLD": str(old), "GOOD": str(good)}
    out = run_cli(*[subst.get(a, a) for a in args])
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert match in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert old.read_text() == "d,K,angle\n3,5,90\n"


@pytest.mark.parametrize(
    "problem,kwargs,match",
    [
        ("tammes", dict(weight_decay=1e-3), "weight_decay does not apply to the tammes problem"),
        ("ufm", dict(taus=[0.1], search=SearchSettings()), "search does not apply to the ufm problem"),
        ("ufm", dict(taus=[0.1], solver=SolverSettings()), "solver must be UFMSettings"),
        ("tammes", dict(solver=UFMSettings()), "solver must be SolverSettings"),
        ("tammes", dict(search={"rounds": 0}), "search must be SearchSettings"),
    ],
)
def test_the_library_sweep_refuses_settings_of_another_problem(tmp_path, problem, kwargs, match):
    out = tmp_path / "s.csv"
    with pytest.raises(ValueError, match=match):
        sweep(problem, [3], [5], out=out, seed=0, progress=None, **kwargs)
    assert not out.exists()
