"""Pictures of codes: the contact graph against the known polyhedra; the figure itself."""

import matplotlib
import numpy as np
import pytest

from gnc_jax._src.plots import code_figure, code_figure_3d, contact_graph

matplotlib.use("Agg")  # the test process has no display


def _icosahedron():
    g = (1 + 5**0.5) / 2
    P = [p for a in (-1, 1) for b in (-g, g) for p in ((0, a, b), (a, b, 0), (b, 0, a))]
    W = np.array(P, float).T
    return W / np.linalg.norm(W, axis=0)


def _rotated(W, seed=0):
    Q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(3, 3)))
    return Q @ W


@pytest.mark.parametrize(
    "W, edges",
    [
        (np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], float).T / 3**0.5, 6),  # tetrahedron
        (np.hstack([np.eye(3), -np.eye(3)]), 12),  # octahedron
        (_icosahedron(), 30),  # icosahedron
        (np.array([[1.0, 0, 0], [0, 1.0, 0], [-1.0, 0, 0]]).T, 2),  # a half circle: 2 right angles
    ],
)
def test_contact_graph_has_the_edges_of_the_polyhedron(W, edges):
    E = contact_graph(_rotated(W))
    assert len(E) == edges and np.all(E[:, 0] < E[:, 1])


def test_code_figure_draws_two_views_and_rejects_other_dimensions(tmp_path):
    fig = code_figure(_rotated(_icosahedron()), "icosahedron", rattlers=[0])
    assert len(fig.axes) == 2 and "30 contacts" in fig._suptitle.get_text()
    fig.savefig(tmp_path / "c.png", dpi=80)
    assert (tmp_path / "c.png").stat().st_size > 20000
    with pytest.raises(ValueError, match="d = 3"):
        code_figure(np.eye(4))


def test_interactive_view_draws_every_contact_as_an_arc_on_the_sphere(tmp_path):
    W = _rotated(_icosahedron())
    fig = code_figure_3d(W, "icosahedron", rattlers=[3])
    sphere, contacts, points = fig.data
    arcs = np.stack([np.asarray(contacts[c], float) for c in "xyz"])
    pieces = np.split(arcs, np.flatnonzero(np.isnan(arcs[0])), axis=1)
    pieces = [p[:, ~np.isnan(p[0])] for p in pieces if np.any(~np.isnan(p[0]))]
    assert len(pieces) == 30  # one arc per edge of the icosahedron
    for arc in pieces:  # on the sphere (drawn at radius 1.004), from one point of the code to another
        np.testing.assert_allclose(np.linalg.norm(arc, axis=0), 1.004, atol=1e-12)
        ends = arc[:, [0, -1]] / 1.004
        assert np.max(ends.T @ W, axis=1) == pytest.approx([1, 1], abs=1e-12)
    P = np.stack([np.asarray(points[c], float) for c in "xyz"]) / 1.01
    np.testing.assert_allclose(P, W, atol=1e-12)
    assert [c == "#d62728" for c in points.marker.color] == [k == 3 for k in range(12)]
    fig.write_html(tmp_path / "c.html", include_plotlyjs="cdn")
    assert "plotly" in (tmp_path / "c.html").read_text()
    with pytest.raises(ValueError, match="d = 3"):
        code_figure_3d(np.eye(4))
