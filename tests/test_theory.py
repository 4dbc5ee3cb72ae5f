"""Theorem 3.3 constructions checked by the exact QP, and Theorem 3.9's bounds."""

import math

import numpy as np
import pytest

import gnc_jax
from gnc_jax._src import theory


@pytest.mark.parametrize(
    "d,K", [(2, K) for K in range(3, 13)] + [(d, K) for d in range(2, 7) for K in range(2, 2 * d + 1)]
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
