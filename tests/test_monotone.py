"""benchmarks/monotone.py's neighbour pass over the table: a code of K from the table's codes of K - 1
and K + 1, against a closed form (the Tammes optimum of six points on S^2, the octahedron's 90 degrees)."""

import json
from pathlib import Path

import numpy as np
import pytest

from gnc_jax import SearchSettings, SolverSettings, store

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"
# Two poles and an equilateral triangle on the equator: five points at least 90 degrees apart.
BIPYRAMID = np.array([[0, 0, 1, -0.5, -0.5], [0, 0, 0, 0.75**0.5, -(0.75**0.5)], [1, -1, 0, 0, 0]])
# The bipyramid and one more equatorial point 60 degrees from two of the triangle's: a poor code of 6.
POOR_SIX = np.hstack([BIPYRAMID, [[0.5], [0.75**0.5], [0.0]]])


@pytest.fixture
def monotone(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # monotone imports build_table and draw_probe beside it
    import monotone

    return monotone


def min_angle_deg(W):
    """The smallest pairwise angle of W's columns, in plain numpy (independent of gnc_jax)."""
    G = W.T @ W - 2 * np.eye(W.shape[1])
    return np.degrees(np.arccos(G.max()))


def test_the_neighbour_screen_raises_a_poor_code_of_the_table(monotone, tmp_path):
    # The table's (3, 5) code is the bipyramid, whose holes lie on the equator, and its (3, 6) code the
    # poor one: the screen solves (3, 6) from the bipyramid plus a point, to the optimum's 90 degrees.
    codes = {("tammes", 3, 5): (90.0, BIPYRAMID), ("tammes", 3, 6): (60.0, POOR_SIX)}
    settings = SolverSettings(restarts=2, steps=200, hop_rounds=0), SearchSettings()
    with store.ResultsStore(tmp_path / "n.csv") as st:
        assert monotone.neighbour_screen(st, codes, [(3, 5), (3, 6)], settings) == 1
    (row,) = store.read_rows(tmp_path / "n.csv")
    assert (row["K"], json.loads(row["settings"])["initial"][:24]) == (6, "finished neighbour codes")
    assert min_angle_deg(store.load_config(tmp_path / "n.csv", row)["W"]) == pytest.approx(90.0, abs=1e-9)
    assert codes["tammes", 3, 6][0] == pytest.approx(90.0, abs=1e-9)
