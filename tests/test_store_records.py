"""benchmarks/store_records.py: a saved configuration becomes a certified row of a store, never worse
than the file, and a rerun skips the files a row already names."""

import sys
from pathlib import Path

import numpy as np
import pytest

from gnc_jax import store

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"


@pytest.fixture
def store_records(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # store_records imports cross_seed_stores beside it
    import store_records

    return store_records


def min_angle_deg(W):
    """The smallest pairwise angle of W's columns, in plain numpy (independent of gnc_jax)."""
    G = W.T @ W - 2 * np.eye(W.shape[1])
    return np.degrees(np.arccos(G.max()))


def test_a_saved_code_is_stored_no_worse_than_the_file_and_a_rerun_resumes(
    tmp_path, monkeypatch, capsys, store_records
):
    # A tetrahedron, rotated and perturbed: its optimum is the regular one, arccos(-1/3) (closed form).
    W = np.array([[1, 1, -1, -1], [1, -1, 1, -1], [1, -1, -1, 1]], float) / np.sqrt(3)
    Q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(3, 3)))
    W = Q @ W + 1e-3 * np.random.default_rng(1).normal(size=(3, 4))
    W /= np.linalg.norm(W, axis=0)
    file_angle = min_angle_deg(W)
    path = tmp_path / "records" / "tammes_d3_K4_seed0.npy"
    path.parent.mkdir()
    np.save(path, W)
    out = tmp_path / "store.csv"
    argv = ["store_records.py", str(path), "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    store_records.main()
    [row] = store.load([out])
    assert (row["problem"], row["d"], row["K"]) == ("tammes", 3, 4)
    assert row["min_angle_deg"] >= file_angle - 1e-9
    assert abs(row["min_angle_deg"] - np.degrees(np.arccos(-1 / 3))) < 1e-6
    stored = store.load_config(str(out), row)["W"]
    assert abs(min_angle_deg(stored) - row["min_angle_deg"]) < 1e-9  # the row is its file's
    capsys.readouterr()
    store_records.main()  # the file is named by a row: nothing to do
    assert len(store.load([out])) == 1 and capsys.readouterr().out == ""


def test_a_file_that_is_not_a_code_is_refused_naming_the_argument(
    tmp_path, monkeypatch, capsys, store_records
):
    np.save(tmp_path / "flat.npy", np.zeros(5))
    for name, message in (("flat.npy", "shape (5,)"), ("missing.npy", "no file")):
        monkeypatch.setattr(
            sys, "argv", ["store_records.py", str(tmp_path / name), "--out", str(tmp_path / "s.csv")]
        )
        with pytest.raises(SystemExit) as exit:
            store_records.main()
        err = capsys.readouterr().err
        assert exit.value.code == 2 and "argument files" in err and message in err
    assert not (tmp_path / "s.csv").exists()  # refused before the store is opened
