"""Theorem 3.3 constructions checked by the exact QP, and Theorem 3.9's bounds."""

import math

import numpy as np
import pytest

import gnc_jax
from gnc_jax._src import theory

# The fast tier's share of the closed forms: each regime of Theorem 3.3 (the polygon, the simplex,
# between it and the cross-polytope, the cross-polytope); the full tier runs every (d, K).
FAST_CLOSED_FORMS = {(2, 7), (3, 4), (4, 6), (5, 10)}


@pytest.mark.parametrize(
    "d,K",
    [
        pytest.param(d, K, marks=[] if (d, K) in FAST_CLOSED_FORMS else [pytest.mark.slow])
        for d, K in [(2, K) for K in range(3, 13)]
        + [(d, K) for d in range(2, 7) for K in range(2, 2 * d + 1)]
    ],
)
def test_closed_form_configurations_attain_their_margin(d, K):
    res = theory.softmax_code_closed_form(d, K)
    assert res is not None
    rho, W = res
    assert W.shape == (d, K)
    np.testing.assert_allclose(np.linalg.norm(W, axis=0), 1.0, atol=1e-14)
    assert gnc_jax.softmax_code_margin(W) == pytest.approx(rho, abs=1e-12)
    assert gnc_jax.max_cos(W) == pytest.approx(theory.tammes_closed_form(d, K), abs=1e-12)


def test_closed_form_values():
    assert theory.softmax_code_closed_form(5, 4)[0] == pytest.approx(4 / 3)
    assert theory.softmax_code_closed_form(2, 6)[0] == pytest.approx(0.5)  # 1 - cos(60 deg)
    assert theory.softmax_code_closed_form(4, 8)[0] == 1.0
    assert theory.softmax_code_closed_form(3, 7) is None
    G = theory.simplex_etf(6, 5).T @ theory.simplex_etf(6, 5)
    np.testing.assert_allclose(G, np.eye(5) * 1.25 - 0.25, atol=1e-14)  # cosines -1/(K-1)


def test_bounds_formula_and_order():
    for d in range(2, 12):
        for K in (10, 50, 1000):
            lo, hi = theory.softmax_code_bounds(d, K)
            # direct evaluation with math.gamma
            g = math.gamma
            lo_ref = 0.5 * (math.sqrt(math.pi) / K * g((d + 1) / 2) / g(d / 2 + 1)) ** (2 / (d - 1))
            hi_ref = 2 * (2 * math.sqrt(math.pi) / K * g((d + 1) / 2) / g(d / 2)) ** (1 / (d - 1))
            assert lo == pytest.approx(lo_ref, rel=1e-12) and hi == pytest.approx(hi_ref, rel=1e-12)
            if theory.bounds_applicable(d, K):
                assert 0 < lo < hi


def test_bounds_bracket_d2_closed_form():
    # d = 2: rho* = 1 - cos(2 pi / K) must lie within eq. (13) where it applies.
    for K in range(4, 200):
        if theory.bounds_applicable(2, K):
            lo, hi = theory.softmax_code_bounds(2, K)
            rho = theory.softmax_code_closed_form(2, K)[0]
            assert lo <= rho <= hi


@pytest.mark.parametrize("args", [(1, 3), (3, 1), (2.5, 3), (True, 3)])
def test_bad_sizes(args):
    with pytest.raises(ValueError, match="must be an integer >= 2"):
        theory.softmax_code_bounds(*args)


def test_construction_size_errors():
    with pytest.raises(ValueError, match="K must be <= d \\+ 1"):
        theory.simplex_etf(3, 5)
    with pytest.raises(ValueError, match="K must be <= 2d"):
        theory.cross_polytope(3, 7)


def test_tammes_closed_forms_match_the_proven_reference_rows():
    from conftest import known_tammes

    checked = set()
    for row in known_tammes():
        value = theory.tammes_closed_form(row["d"], row["K"])
        if value is not None:
            assert row["proven"], row  # a closed form is only given where a proof exists
            assert value == pytest.approx(row["cos"], abs=1e-12), row
            checked.add((row["d"], row["K"]))
    assert {(3, 12), (4, 120)} <= checked


def test_e8_root_system_attains_the_tammes_closed_form_at_8_240():
    # the 112 roots +-e_i +- e_j and the 128 (+-1/2)^8 with an even number of minus signs, / sqrt 2
    roots = []
    for i in range(8):
        for j in range(i + 1, 8):
            for si in (1, -1):
                for sj in (1, -1):
                    v = np.zeros(8)
                    v[i], v[j] = si, sj
                    roots.append(v)
    for bits in range(256):
        signs = np.array([-1 if bits >> k & 1 else 1 for k in range(8)])
        if np.sum(signs < 0) % 2 == 0:
            roots.append(signs / 2)
    W = np.array(roots).T / np.sqrt(2)
    assert W.shape == (8, 240)
    assert gnc_jax.max_cos(W) == pytest.approx(theory.tammes_closed_form(8, 240), abs=1e-12)
    assert theory.tammes_closed_form(8, 239) is None and theory.tammes_closed_form(4, 24) is None
