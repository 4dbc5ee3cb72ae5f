"""The results store: exact round trips, torn lines, format and lock checks, best rows."""

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

import gnc_jax
import gnc_jax.store

from gnc_jax._src import store
from gnc_jax._src.store import ResultsStore, StoreError


def row(problem="tammes", d=3, K=5, n=None, tau=None, **values):
    """A store row with the given key and values (the rest empty)."""
    base = {k: None for k in store.COLUMNS} | dict(problem=problem, d=d, K=K, n=n, tau=tau)
    base |= {
        "status": "stationary",
        "residual": -1e-16,
        "settings": json.dumps({"seed": 0}),
        "store_format": store.STORE_FORMAT,
    }
    return base | values


def test_rows_round_trip_exactly(tmp_path):
    path = tmp_path / "s.csv"
    rows = [
        row(K=5, min_angle_deg=90.00000000000001, max_cos=1 / 3, rattlers="0 4", certificate_gap=2.2e-16)
        | dict(search_stopped_by="work", search_rounds=15, search_restarts=1, search_work=9.5e7 / 3),
        row(problem="ufm", K=4, n=2, tau=0.05, loss=float("nan"), gnc1=1e-300),
    ]
    with ResultsStore(path) as st:
        st.append(rows)
    back = store.read_rows(path)
    assert back[0]["min_angle_deg"] == 90.00000000000001 and back[0]["max_cos"] == 1 / 3
    assert back[0]["rattlers"] == "0 4" and back[0]["n"] is None and back[0]["loss"] is None
    search = ("search_stopped_by", "search_rounds", "search_work")
    assert tuple(back[0][k] for k in search) == ("work", 15, 9.5e7 / 3)
    assert back[1]["search_stopped_by"] is None and back[1]["search_budget"] is None
    assert back[0]["residual"] == -1e-16 and back[0]["status"] == "stationary"
    assert back[1]["tau"] == 0.05 and back[1]["n"] == 2 and math.isnan(back[1]["loss"])
    assert back[1]["gnc1"] == 1e-300
    assert store.row_key(back[1]) == ("ufm", 3, 4, 2, 0.05)


def test_numpy_scalars_are_written_as_the_numbers_they_hold(tmp_path):
    path = tmp_path / "s.csv"
    third = np.float32(1) / np.float32(3)
    values = dict(min_angle_deg=np.float64(90) + 1e-14, max_cos=third, loss=np.float64("nan"))
    with ResultsStore(path) as st:
        st.append([row(K=np.int64(7), search_rounds=np.int32(3), **values)])
    (back,) = store.read_rows(path)
    assert back["min_angle_deg"] == 90 + 1e-14 and back["max_cos"] == float(third)
    assert math.isnan(back["loss"]) and back["K"] == 7 and back["search_rounds"] == 3


def test_a_torn_last_line_is_ignored_and_dropped_before_appending(tmp_path):
    path = tmp_path / "s.csv"
    with ResultsStore(path) as st:
        st.append([row(K=5, min_angle_deg=90.0)])
    with open(path, "a") as f:
        f.write("tammes,3,6,,,90.0")  # a row cut short by SIGKILL
    assert [r["K"] for r in store.read_rows(path)] == [5]
    with ResultsStore(path) as st:
        assert set(st.finished()) == {("tammes", 3, 5, None, None)}
        st.append([row(K=6, min_angle_deg=90.0)])
    assert [r["K"] for r in store.read_rows(path)] == [5, 6]


def test_other_formats_are_refused_and_left_untouched(tmp_path):
    path = tmp_path / "old.csv"
    path.write_text("d,K,min_angle_deg\n3,5,90\n")
    with pytest.raises(StoreError, match="incompatible version"):
        ResultsStore(path)
    assert path.read_text() == "d,K,min_angle_deg\n3,5,90\n"
    newer = tmp_path / "newer.csv"
    with ResultsStore(newer) as st:
        st.append([row(store_format=store.STORE_FORMAT + 1)])
    before = newer.read_bytes()
    with pytest.raises(StoreError, match=f"store format {store.STORE_FORMAT + 1}"):
        ResultsStore(newer)
    assert newer.read_bytes() == before


def old_format_store(path, fmt, status="converged"):
    """A one-row store as written by format 1 (before the residual column; e.g. the table of codes
    before the global search), format 2 (before the status_note column) or format 3 (before the
    search columns; e.g. the shipped table of codes)."""
    search = store.SEARCH
    dropped = {1: ("residual", "status_note", *search), 2: ("status_note", *search), 3: search}[fmt]
    columns = [c for c in store.COLUMNS if c not in dropped]
    values = {"problem": "tammes", "d": "3", "K": "5", "min_angle_deg": "90.0", "status": status}
    values |= {"residual": "1e-12", "store_format": str(fmt)}
    path.write_text(",".join(columns) + "\n" + ",".join(values.get(c, "") for c in columns) + "\n")


@pytest.mark.parametrize("fmt", [1, 2, 3])
def test_older_formats_are_read_but_not_appended_to(tmp_path, fmt):
    path = tmp_path / f"v{fmt}.csv"
    old_format_store(path, fmt)
    (r,) = store.read_rows(path)
    assert r["min_angle_deg"] == 90.0 and r["status"] == "converged" and r["status_note"] is None
    assert r["residual"] == (None if fmt == 1 else 1e-12)
    assert r["search_stopped_by"] is None and r["search_rounds"] is None
    before = path.read_bytes()
    with pytest.raises(StoreError, match=f"format {fmt}"):
        ResultsStore(path)
    assert path.read_bytes() == before


@pytest.mark.parametrize("fmt", [2, 3])
def test_upgrade_makes_an_older_store_resumable_and_marks_failed_rows(tmp_path, fmt):
    path = tmp_path / f"v{fmt}.csv"
    old_format_store(path, fmt, status="failed")
    with pytest.raises(StoreError, match=f"format {fmt}.*upgrade it"):
        ResultsStore(path)
    assert store.upgrade(path) == 1
    (r,) = store.read_rows(path, writable=True)
    assert (r["store_format"], r["status"], r["residual"]) == (store.STORE_FORMAT, "failed", 1e-12)
    # format 2 kept no reason for a failed row; format 3 did (none in this row)
    assert r["status_note"] == ("reason not recorded (store format 2)" if fmt == 2 else None)
    assert r["search_stopped_by"] is None and r["search_work"] is None
    with ResultsStore(path) as st:  # now appendable
        st.append([row(K=6, status="failed", status_note="LP polish: HiGHS status 7", search_rounds=3)])
    added = store.read_rows(path)[1]
    assert added["status_note"] == "LP polish: HiGHS status 7" and added["search_rounds"] == 3
    with pytest.raises(StoreError, match="format 4, not 2 or 3"):  # upgrading twice is refused
        store.upgrade(path)
    v1 = tmp_path / "v1.csv"
    old_format_store(v1, 1)
    before = v1.read_bytes()
    with pytest.raises(StoreError, match="format 1, not 2 or 3"):
        store.upgrade(v1)
    assert v1.read_bytes() == before
    for missing in (tmp_path / "none.csv", tmp_path / "no_dir" / "none.csv"):
        with pytest.raises(StoreError, match="no results store at"):
            store.upgrade(missing)
    assert not (tmp_path / "none.csv.lock").exists()


def test_one_writer_at_a_time(tmp_path):
    path = tmp_path / "s.csv"
    with ResultsStore(path), pytest.raises(StoreError, match="another sweep"):
        ResultsStore(path)
    with ResultsStore(path):  # released
        pass


@pytest.mark.parametrize("where,match", [("missing/s.csv", "does not exist"), ("", "is a directory")])
def test_unusable_paths(tmp_path, where, match):
    with pytest.raises(StoreError, match=match):
        ResultsStore(tmp_path / where if where else tmp_path)


def test_unwritable_location(tmp_path):
    if os.geteuid() == 0:  # root may write anywhere permissions allow: sysfs refuses new files
        where = Path("/sys/gnc_jax_store.csv")
    else:
        (tmp_path / "ro").mkdir(mode=0o500)
        where = tmp_path / "ro" / "s.csv"
    with pytest.raises(StoreError, match="not writable"):
        ResultsStore(where)
    assert not where.exists()


def test_best_per_instance():
    rows = [
        row(K=5, min_angle_deg=89.0),
        row(K=5, min_angle_deg=90.0),
        row(problem="softmax-code", K=5, rho_one_vs_rest=0.9),
        row(problem="softmax-code", K=5, rho_one_vs_rest=1.0),
        row(problem="ufm", K=5, n=1, tau=0.1, loss=0.3),
        row(problem="ufm", K=5, n=1, tau=0.1, loss=0.2),
        row(problem="ufm", K=5, n=1, tau=0.1, loss=float("nan")),
    ]
    got = {r["problem"]: r for r in store.best(rows)}
    assert got["tammes"]["min_angle_deg"] == 90.0 and got["tammes"] is rows[1]
    assert got["softmax-code"]["rho_one_vs_rest"] == 1.0
    assert got["ufm"]["loss"] == 0.2


def test_best_prefers_a_row_that_did_not_fail_at_the_same_score():
    # A failed polish solved again from its own configuration: same score, a status that says more.
    failed = row(K=5, min_angle_deg=90.0, status="failed")
    again = row(K=5, min_angle_deg=90.0, status="stationary")
    worse = row(K=5, min_angle_deg=89.0, status="stationary")
    assert store.best([failed, again, worse]) == [again]
    assert store.best([again, failed]) == [again]
    assert store.best([failed, row(K=5, min_angle_deg=90.0, status="failed")]) == [failed]


def test_settings_conflict_names_the_difference():
    rows = [row(settings=json.dumps({"seed": 0, "restarts": 16}))]
    assert store.settings_conflict(rows, "tammes", json.dumps({"seed": 0, "restarts": 16})) is None
    assert store.settings_conflict(rows, "softmax-code", json.dumps({"seed": 1})) is None  # other problem
    msg = store.settings_conflict(rows, "tammes", json.dumps({"seed": 0, "restarts": 64}))
    assert "restarts 16 in the store, 64 now" in msg
    started = [row(settings=json.dumps({"seed": 0, "restarts": 16, "initial": "neighbour codes"}))]
    assert store.settings_conflict(started, "tammes", json.dumps({"seed": 0, "restarts": 64})) is None


def test_codes_round_trip_as_plain_numpy_files(tmp_path):
    sol = gnc_jax.solve_tammes(3, 6, seed=0, solver=gnc_jax.SolverSettings(restarts=4, hop_rounds=0))
    npy = gnc_jax.store.save_code(tmp_path / "c.npy", sol)
    npz = gnc_jax.store.save_code(tmp_path / "sub" / "c.npz", sol)
    np.testing.assert_array_equal(np.load(npy), sol.W)  # what any framework reads: the array itself
    with np.load(npz, allow_pickle=False) as data:
        np.testing.assert_array_equal(data["W"], sol.W)
        assert float(data["max_cos"]) == sol.max_cos and str(data["problem"]) == "tammes"
    for p in (npy, npz):
        W = gnc_jax.store.load_code(p)
        assert W.dtype == np.float64 and W.shape == (3, 6)
        np.testing.assert_array_equal(W, sol.W)  # unit columns already: bit for bit
        assert gnc_jax.max_cos(W) == pytest.approx(sol.max_cos, abs=1e-15)
    assert not list(tmp_path.glob("*.tmp*")) and sorted(p.name for p in tmp_path.iterdir()) == [
        "c.npy",
        "sub",
    ]


def test_a_pair_stored_again_keeps_the_earlier_rows_configuration(tmp_path):
    first, second = np.eye(3)[:, :2], np.eye(3)[:, 1:]
    with ResultsStore(tmp_path / "s.csv") as st:
        names = []
        for W in (first, second, first):
            config = st.save_config(st.unused_stem("tammes_d3_K2"), {"W": W})
            st.append([row(K=2, config=config)])
            names.append(config)
        assert st.unused_stem("tammes_d3_K3") == "tammes_d3_K3"
    assert [Path(n).name for n in names] == [
        "tammes_d3_K2_W.npy",
        "tammes_d3_K2_1_W.npy",
        "tammes_d3_K2_2_W.npy",
    ]
    for r, W in zip(store.read_rows(tmp_path / "s.csv"), (first, second, first)):
        np.testing.assert_array_equal(np.load(tmp_path / r["config"]), W)


def test_bad_code_files_are_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="path must end in .npy or .npz"):
        gnc_jax.store.save_code(tmp_path / "c.txt", np.eye(3))
    with pytest.raises(ValueError, match="code contains NaN"):
        gnc_jax.store.save_code(tmp_path / "c.npy", np.full((3, 4), np.nan))
    assert not list(tmp_path.iterdir())  # nothing written
    np.savez(tmp_path / "other.npz", X=np.eye(3))
    with pytest.raises(ValueError, match="holds no array 'W'"):
        gnc_jax.store.load_code(tmp_path / "other.npz")
    np.save(tmp_path / "flat.npy", np.ones(5))
    with pytest.raises(ValueError, match="flat.npy must have shape"):
        gnc_jax.store.load_code(tmp_path / "flat.npy")
    (tmp_path / "junk.npy").write_text("not numpy")
    with pytest.raises(ValueError, match="not a NumPy file"):
        gnc_jax.store.load_code(tmp_path / "junk.npy")
    with pytest.raises(ValueError, match="is not a file"):
        gnc_jax.store.load_code(tmp_path / "missing.npy")


def test_a_setting_added_later_agrees_with_old_rows_only_where_it_changes_nothing():
    from gnc_jax._src import sweep

    rows = [{"problem": "tammes", "settings": json.dumps({"seed": 0, "restarts": 0})}]
    new = json.dumps({"seed": 0, "restarts": 0, "work_limit": 2e11})
    assert "work_limit None in the store" in store.settings_conflict(rows, "tammes", new)
    assert store.settings_conflict(rows, "tammes", new, {"work_limit": 2e11}) is None
    assert store.settings_conflict(rows, "tammes", new, {"work_limit": 1.0}) is not None  # another value
    s = gnc_jax.SolverSettings(work_limit=2e11)  # the default on 2 CPU cores
    pair = lambda d, K: sweep.Instance("tammes", d, K)
    assert sweep._unbound_limits(s, [pair(3, 130), pair(8, 64)]) == {"work_limit": 2e11}  # the table's
    assert sweep._unbound_limits(s, [pair(3, 13), pair(64, 1000)]) == {}  # the limit binds at (64, 1000)
    assert sweep._unbound_limits(gnc_jax.UFMSettings(), [pair(3, 13)]) == {}  # no such setting
