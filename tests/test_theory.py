"""Theorem 3.3 constructions checked by the exact QP, and Theorem 3.9's bounds."""

import math

import numpy as np
import pytest

import gnc_jax
from gnc_jax._src import references, theory

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
    assert {(3, 7), (3, 8), (3, 9), (3, 11), (3, 12), (3, 24), (4, 120), (5, 16)} <= checked


def e8_roots() -> np.ndarray:
    """E8's 240 roots (norm sqrt 2) as rows: +-e_i +- e_j and (+-1/2)^8 with an even number of minus
    signs."""
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
    return np.array(roots)


def unit_columns_off(points: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """The rows of ``points`` projected off the span of the rows of ``fixed``, written in an
    orthonormal basis of its complement and normalized: one unit column each."""
    basis = np.linalg.svd(np.eye(8) - np.linalg.pinv(fixed) @ fixed)[0][:, : 8 - len(fixed)]
    W = basis.T @ points.T
    return W / np.linalg.norm(W, axis=0)


def test_sharp_codes_attain_the_tammes_closed_forms():
    # E8 itself; the 56 roots at inner product 1 with a root, off it (E7's 56 in R^7); the 27 at 1
    # and 0 with two roots at -1, off both (the Schlaefli configuration in R^6); the 5-demicube.
    R = e8_roots()
    a = R[0]
    b = R[np.flatnonzero(np.isclose(R @ a, -1))[0]]
    demicube = np.array([s for s in np.array(np.meshgrid(*[[1, -1]] * 5)).reshape(5, -1).T if np.prod(s) > 0])
    codes = {
        (8, 240): R.T / np.sqrt(2),
        (7, 56): unit_columns_off(R[np.isclose(R @ a, 1)], a[None]),
        (6, 27): unit_columns_off(R[np.isclose(R @ a, 1) & np.isclose(R @ b, 0)], np.stack([a, b])),
        (5, 16): demicube.T / np.sqrt(5),
    }
    for (d, K), W in codes.items():
        assert W.shape == (d, K)
        value = theory.tammes_closed_form(d, K)
        assert gnc_jax.max_cos(W) == pytest.approx(value, abs=1e-12), (d, K)
        # the closed form is optimal: Levenshtein's bound, from a second method (the Delsarte LP)
        assert references.max_cos_lower_bound(d, K) == pytest.approx(value, abs=1e-6), (d, K)
        assert theory.tammes_closed_form(d, K - 1) is None and theory.tammes_closed_form(d, K + 1) is None
    assert theory.tammes_closed_form(4, 24) is None
