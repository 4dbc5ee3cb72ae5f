"""Independent references (gnc_jax._src.references): the Kerdock codes against their definition, the
LP bound against Levenshtein's closed forms and the codes known to attain it, and the solvers' codes
against the bound."""

import itertools
import math

import numpy as np
import pytest
from conftest import known_tammes

import gnc_jax
from gnc_jax import theory
from gnc_jax._src import references


@pytest.mark.parametrize("d", [4, 16, 64])
def test_kerdock_codes_are_mutually_unbiased_bases_and_their_negatives(d):
    bases = theory.mutually_unbiased_bases(d)
    assert len(bases) == d // 2 + 1
    for B in bases:
        np.testing.assert_allclose(B.T @ B, np.eye(d), atol=1e-12)
    for B, C in itertools.combinations(bases, 2):
        np.testing.assert_allclose(np.abs(B.T @ C), 1 / math.sqrt(d), atol=1e-12)
    W = theory.kerdock_code(d)
    assert W.shape == (d, d * (d + 2))
    G = W.T @ W
    np.fill_diagonal(G, -1.0)
    assert G.max() == pytest.approx(1 / math.sqrt(d), abs=1e-12)
    values = np.unique(np.round(G, 9))  # 0 (one basis), +-1/sqrt(d) (two bases), -1 (a negative)
    np.testing.assert_allclose(values, sorted({-1.0, 0.0, 1 / math.sqrt(d), -1 / math.sqrt(d)}), atol=1e-9)
    assert len(np.unique(np.round(W.T, 9), axis=0)) == W.shape[1]  # distinct points
    # Certified by the package's own float64 measures, computed independently of the construction.
    assert gnc_jax.max_cos(W) == pytest.approx(1 / math.sqrt(d), abs=1e-12)


def test_the_kerdock_code_in_four_dimensions_is_the_24_cell():
    # The 24-cell: 24 points, 8 nearest neighbours each at 60 degrees (cos 1/2).
    G = theory.kerdock_code(4).T @ theory.kerdock_code(4)
    assert ((np.abs(G - 0.5) < 1e-12).sum(axis=1) == 8).all()


@pytest.mark.parametrize(
    "degree,s,closed_form",
    [  # Levenshtein's bounds L_1, L_2, L_3 in d = 5 (the LP's optimum over degree <= 1, 2, 3)
        (1, -0.9, lambda d, s: (s - 1) / s),
        (1, -0.3, lambda d, s: (s - 1) / s),
        (2, -0.1, lambda d, s: 2 * d * (1 - s) / (1 - d * s)),
        (2, 0.0, lambda d, s: 2 * d * (1 - s) / (1 - d * s)),
        (3, 0.05, lambda d, s: d * (1 - s) * (2 + (d + 1) * s) / (1 - d * s * s)),
        (3, 0.15, lambda d, s: d * (1 - s) * (2 + (d + 1) * s) / (1 - d * s * s)),
    ],
)
def test_the_lp_bound_is_levenshteins_at_low_degree(degree, s, closed_form):
    assert theory.delsarte_bound(5, s, degree) == pytest.approx(closed_form(5, s), rel=1e-6)


def test_the_lp_bound_is_attained_by_e8_and_the_leech_lattice():
    # Kissing configurations (max cos 1/2): 240 in d = 8, 196560 in d = 24, both attaining the bound.
    assert 240 <= theory.delsarte_bound(8, 0.5, degree=6) < 241
    assert 196560 <= theory.delsarte_bound(24, 0.5, degree=11, grid=20000) < 196561
    assert theory.delsarte_bound(4, 0.5) == pytest.approx(25.5584, abs=1e-4)  # Odlyzko-Sloane


def test_the_bound_stays_valid_when_the_grid_misses_the_polynomials_maximum():
    # With 10 grid points the LP's polynomial is positive between them (taken as it is, it would
    # bound E8 by 209 and the Kerdock code by 285); the check on all of [-1, s] lowers it, so the
    # bound is finite and still holds for E8's 240 points and the Kerdock code's 288.
    e8 = references.delsarte_bound(8, 0.5, degree=6, grid=10)
    kerdock = references.delsarte_bound(16, 0.25, grid=10)
    assert math.isfinite(e8) and math.isfinite(kerdock)
    assert e8 >= 240 and kerdock >= 288


@pytest.mark.slow
def test_every_proven_tammes_optimum_respects_the_bound():
    # The bound on max cos against the proven optima of the reference table (an independent source).
    rows = [r for r in known_tammes() if r["proven"] and r["d"] == 3 and 5 <= r["K"] <= 14]
    assert len(rows) >= 8
    for r in rows:
        bound = theory.max_cos_lower_bound(r["d"], r["K"])
        assert math.cos(math.radians(r["angle"])) >= bound - 1e-9, r
    # d = 3, K = 12: the icosahedron attains it (a tight spherical 5-design).
    assert theory.max_cos_lower_bound(3, 12) == pytest.approx(1 / math.sqrt(5), abs=1e-6)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: theory.kerdock_code(8), "d must be 4, 16 or 64"),
        (lambda: theory.kerdock_code(True), "d must be 4, 16 or 64"),
        (lambda: theory.delsarte_bound(1, 0.5), "d must be an integer >= 2"),
        (lambda: theory.delsarte_bound(3, 1.0), "s must lie in"),
        (lambda: theory.delsarte_bound(3, float("nan")), "s must lie in"),
        (lambda: theory.delsarte_bound(3, 0.5, degree=0), "degree"),
        (lambda: theory.max_cos_lower_bound(3, 1), "K must be an integer >= 2"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()
