"""Codes of K from the codes of K - 1 and K + 1 (gnc_jax._src.neighbours) and the sweep's neighbour pass,
against closed forms: the octahedron's holes (face centres, max cos 1/sqrt(3)) and the Tammes optimum of
six points on S^2 (the octahedron's 90 degrees)."""

import json

import jax
import numpy as np
import pytest

from gnc_jax import SolverSettings
from gnc_jax._src import store
from gnc_jax._src.neighbours import less_one_point, neighbour_codes, neighbour_pass, plus_one_point
from gnc_jax._src.sweep import sweep

OCTAHEDRON = np.hstack([np.eye(3), -np.eye(3)])
# Two poles and an equilateral triangle on the equator: five points at least 90 degrees apart.
BIPYRAMID = np.array([[0, 0, 1, -0.5, -0.5], [0, 0, 0, 0.75**0.5, -(0.75**0.5)], [1, -1, 0, 0, 0]])
# The bipyramid and one more equatorial point 60 degrees from two of the triangle's: a poor code of 6.
POOR_SIX = np.hstack([BIPYRAMID, [[0.5], [0.75**0.5], [0.0]]])


def min_angle_deg(W):
    """The smallest pairwise angle of W's columns, in plain numpy (independent of gnc_jax)."""
    G = W.T @ W - 2 * np.eye(W.shape[1])
    return np.degrees(np.arccos(G.max()))


def test_plus_one_point_adds_a_unit_column_in_a_deep_hole():
    codes = plus_one_point(OCTAHEDRON, jax.random.key(0), holes=4)
    assert len(codes) == 4
    depth = []
    for W in codes:
        assert W.shape == (3, 7)
        np.testing.assert_array_equal(W[:, :6], OCTAHEDRON)
        assert np.linalg.norm(W[:, 6]) == pytest.approx(1.0, abs=1e-12)
        depth.append((W[:, 6] @ OCTAHEDRON).max())
    # No point of S^2 is farther from the octahedron than a face centre (max cos 1 / sqrt(3)); the
    # deepest of 48 random points comes near it, and the holes come deepest first.
    assert depth[0] >= 1 / np.sqrt(3) - 1e-12
    assert depth[0] < 0.7
    assert depth == sorted(depth)
    again = plus_one_point(OCTAHEDRON, jax.random.key(0), holes=4)
    assert all(np.array_equal(a, b) for a, b in zip(codes, again))  # same key, same holes


def test_less_one_point_drops_the_columns_whose_removal_leaves_the_widest_code():
    # The poor code of six less its sixth point is the bipyramid (90 degrees); less any other point,
    # the two equatorial points 60 degrees apart remain.
    (best,) = less_one_point(POOR_SIX, 1)
    np.testing.assert_array_equal(best, BIPYRAMID)
    everyone = less_one_point(POOR_SIX, 6)
    assert [round(min_angle_deg(W), 9) for W in everyone] == [90.0] + [60.0] * 5


def test_neighbour_codes_reach_the_six_point_optimum_and_check_shapes():
    Z, angles = neighbour_codes(
        3, 6, BIPYRAMID, np.hstack([OCTAHEDRON, [[1], [1], [1]] / np.sqrt(3)]), jax.random.key(1)
    )
    assert Z.shape == (8, 3, 6) and list(angles) == sorted(angles, reverse=True)
    np.testing.assert_allclose([min_angle_deg(W) for W in Z], angles, atol=1e-9)
    assert angles[0] == pytest.approx(90.0, abs=1e-6)  # the proven optimum of (3, 6)
    _, angles = neighbour_codes(3, 6, BIPYRAMID, None, jax.random.key(1))  # the code below only
    assert len(angles) == 8 and angles.min() == pytest.approx(90.0, abs=1e-6)  # every hole gives it
    Z, angles = neighbour_codes(3, 5, None, None, jax.random.key(1))
    assert Z.shape == (0, 3, 5) and angles.shape == (0,)
    with pytest.raises(ValueError, match=r"upper must have shape \(3, 7\)"):
        neighbour_codes(3, 6, None, OCTAHEDRON, jax.random.key(1))


def test_the_pass_requeues_a_raised_pairs_neighbours_and_stops_on_a_lost_start():
    # (3, 5) is the bipyramid (the optimum, 90 degrees), (3, 6) the poor code and (3, 7) the octahedron
    # and a face centre (54.7 degrees). The candidates of 6 reach its optimum, 90 degrees: 6 is raised
    # and sends 5 and 7 back; the octahedron plus a point then raises 7, which sends 6 back.
    above = np.hstack([OCTAHEDRON, [[1], [1], [1]] / np.sqrt(3)])
    codes = {5: BIPYRAMID, 6: POOR_SIX, 7: above}
    screened = []

    def best(d, K):
        return (min_angle_deg(codes[K]), codes[K]) if K in codes else None

    def keep_start(d, K, Z, angles):
        codes[K] = Z[0]
        return angles[0]

    def key(d, K):
        screened.append(K)
        return jax.random.key(K)

    assert neighbour_pass([(3, 5), (3, 6), (3, 7)], best, keep_start, key, progress=None) == 2
    assert screened == [5, 6, 5, 7, 6]
    assert min_angle_deg(codes[6]) == pytest.approx(90.0, abs=1e-6)
    assert min_angle_deg(codes[7]) > min_angle_deg(above) + 10
    codes[6] = POOR_SIX
    with pytest.raises(RuntimeError, match="d=3 K=6: the solve ended at 60.0 deg, below its start"):
        neighbour_pass([(3, 6)], best, lambda d, K, Z, angles: 60.0, key, progress=None)


def test_the_sweeps_neighbour_pass_raises_a_poor_code_once(tmp_path, monkeypatch):
    # A store whose (3, 6) row is the poor code (written by hand, as another run would); the sweep
    # solves (3, 5), then its pass makes (3, 6) from the bipyramid plus a point and solves it again.
    # The raised (3, 6) puts (3, 5) back in the queue: it is screened again (and stays as it is).
    screened = []

    def spy(d, K, lower, upper, key):
        screened.append(K)
        return neighbour_codes(d, K, lower, upper, key)

    monkeypatch.setattr("gnc_jax._src.neighbours.neighbour_codes", spy)
    path = tmp_path / "s.csv"
    with store.ResultsStore(path) as st:
        row = {k: None for k in store.COLUMNS} | dict(problem="tammes", d=3, K=6, status="stationary")
        row |= dict(min_angle_deg=float(min_angle_deg(POOR_SIX)), settings=json.dumps({"initial": "by hand"}))
        st.append(
            [row | {"config": st.save_config("poor", {"W": POOR_SIX}), "store_format": store.STORE_FORMAT}]
        )
    solver = SolverSettings(restarts=2, steps=200, hop_rounds=0)
    run = lambda: sweep(
        "tammes", [3], [5, 6], out=path, solver=solver, workers=1, progress=None, neighbours=True
    )
    report = run()
    assert (report.solved, report.skipped, report.improved) == (1, 1, 1)
    assert screened == [5, 6, 5]
    rows = store.read_rows(path)
    new = rows[-1]
    assert (new["K"], json.loads(new["settings"])["initial"][:15]) == (6, "neighbour codes")
    assert new["min_angle_deg"] == pytest.approx(90.0, abs=1e-9)
    assert min_angle_deg(store.load_config(path, new)["W"]) == pytest.approx(90.0, abs=1e-9)
    screened.clear()
    again = run()  # a rerun finds nothing to raise and writes nothing
    assert (again.solved, again.improved) == (0, 0) and len(store.read_rows(path)) == len(rows)
    assert screened == [5, 6]


def test_the_neighbour_pass_is_refused_for_other_problems(tmp_path):
    with pytest.raises(ValueError, match="neighbours applies only to the tammes problem"):
        sweep("softmax-code", [3], [5], out=tmp_path / "s.csv", progress=None, neighbours=True)
    with pytest.raises(ValueError, match="neighbours must be True or False"):
        sweep("tammes", [3], [5], out=tmp_path / "s.csv", progress=None, neighbours="yes")
    assert not (tmp_path / "s.csv").exists()
