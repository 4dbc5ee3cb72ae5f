"""benchmarks/monotone.py's neighbour pass over the table: a code of K from the table's codes of K - 1
and K + 1, against a closed form (the Tammes optimum of six points on S^2, the octahedron's 90 degrees)."""

import numpy as np
import pytest
from pathlib import Path

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"
OCTAHEDRON = np.hstack([np.eye(3), -np.eye(3)])
# Two poles and an equilateral triangle on the equator: five points at least 90 degrees apart.
BIPYRAMID = np.array([[0, 0, 1, -0.5, -0.5], [0, 0, 0, 0.75**0.5, -(0.75**0.5)], [1, -1, 0, 0, 0]])


@pytest.fixture
def monotone(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # monotone imports build_table and draw_probe beside it
    import monotone

    return monotone


def min_angle_deg(W):
    """The smallest pairwise angle of W's columns, in plain numpy (independent of gnc_jax)."""
    G = W.T @ W - 2 * np.eye(W.shape[1])
    return np.degrees(np.arccos(G.max()))


def test_neighbour_candidates_reach_the_six_point_optimum(monotone):
    # Below: the bipyramid, whose holes lie on the equator; above: the octahedron and one more point.
    above = np.hstack([OCTAHEDRON, np.ones((3, 1)) / np.sqrt(3)])
    codes = {("tammes", 3, 5): (0.0, BIPYRAMID), ("tammes", 3, 7): (0.0, above)}
    Z, angles = monotone.neighbour_candidates(codes, 3, 6)
    assert Z.shape == (8, 3, 6)  # the best 8 of 16 holes of the bipyramid and the code above less each point
    np.testing.assert_allclose([min_angle_deg(W) for W in Z], angles, atol=1e-9)
    assert angles[0] == pytest.approx(90.0, abs=1e-6)  # the proven optimum of (3, 6)
    below_only = {("tammes", 3, 5): (0.0, BIPYRAMID)}
    _, angles = monotone.neighbour_candidates(below_only, 3, 6)
    assert len(angles) == 8 and angles.min() == pytest.approx(90.0, abs=1e-6)  # every hole gives it


def test_neighbour_candidates_without_neighbours_are_empty(monotone):
    Z, angles = monotone.neighbour_candidates({("tammes", 3, 9): (0.0, np.eye(3, 9))}, 3, 5)
    assert Z.shape == (0, 3, 5) and angles.shape == (0,)
