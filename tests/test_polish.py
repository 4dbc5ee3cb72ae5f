"""The SLP polish's LP solves (gnc_jax._src.polish)."""

import numpy as np
import pytest
from conftest import DATA
from scipy import sparse
from scipy.optimize import linprog

from gnc_jax._src import polish


@pytest.mark.parametrize("path", ["interior point first", "simplex capped, then interior point"])
def test_an_lp_that_stalls_the_dual_simplex_is_solved(path, monkeypatch):
    # One LP of the polish of a softmax code at d = 8, K = 38 (744 rows, 533 columns, the step's
    # scaled form: bounds [-1, 1] on the step, the max s free). HiGHS's dual simplex ran on it for
    # over 40 minutes (the regen's sweep sat there). At 533 columns _solve_lp gives it to the
    # interior-point method first; with the threshold raised, it caps the simplex's iterations and
    # then uses that method. Reference: the interior-point method called directly.
    if path.startswith("simplex"):
        monkeypatch.setattr(polish, "LP_IPM_FIRST_COLUMNS", 10**9)
    f = np.load(DATA / "stalling_lp.npz")
    A = sparse.csr_array((f["data"], f["indices"], f["indptr"]), shape=tuple(f["shape"]))
    bounds = [(-1.0, 1.0)] * (A.shape[1] - 1) + [(None, None)]
    lp = polish._solve_lp(f["c"], A, f["b_ub"], bounds)
    reference = linprog(f["c"], A_ub=A, b_ub=f["b_ub"], bounds=bounds, method="highs-ipm")
    assert lp.status == 0 and reference.status == 0
    assert lp.fun == pytest.approx(reference.fun, rel=1e-9, abs=1e-15)
    # feasible to HiGHS's primal feasibility tolerance (1e-7; the polish then evaluates its step exactly)
    assert np.max(A @ lp.x - f["b_ub"]) <= 1e-7 and np.max(np.abs(lp.x[:-1])) <= 1 + 1e-12


@pytest.mark.parametrize("rows, cols, above", [(300, 200, False), (900, 500, True)])
def test_both_lp_paths_reach_the_dual_simplexs_optimum(rows, cols, above):
    # An LP of the polish's form (min s: A v - s <= b, |v|_inf <= 1) below and above
    # LP_IPM_FIRST_COLUMNS (dual simplex, interior point): _solve_lp's optimum is the dual simplex's.
    assert (cols + 1 > polish.LP_IPM_FIRST_COLUMNS) == above
    rng = np.random.default_rng(0)
    A = sparse.random(rows, cols, density=6 / cols, random_state=rng, data_rvs=rng.standard_normal)
    A = sparse.hstack([A, -np.ones((rows, 1))], format="csr")
    b = rng.uniform(0.0, 5.0, rows)
    c = np.zeros(cols + 1)
    c[-1] = 1.0
    bounds = [(-1.0, 1.0)] * cols + [(None, None)]
    lp = polish._solve_lp(c, A, b, bounds)
    reference = linprog(c, A_ub=A, b_ub=b, bounds=bounds, method="highs-ds")
    assert lp.status == 0 and reference.status == 0
    assert lp.fun == pytest.approx(reference.fun, rel=1e-9, abs=1e-12)
