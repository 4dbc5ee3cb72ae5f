"""The SLP polish's LP solves (gnc_jax._src.polish)."""

import numpy as np
import pytest
from conftest import DATA
from scipy import sparse
from scipy.optimize import linprog

from gnc_jax._src import polish


def test_an_lp_that_stalls_the_dual_simplex_is_solved():
    # One LP of the polish of a softmax code at d = 8, K = 38 (744 rows, 533 columns, the step's
    # scaled form: bounds [-1, 1] on the step, the max s free). HiGHS's dual simplex ran on it for
    # over 40 minutes (the regen's sweep sat there); _solve_lp caps its iterations and then solves
    # it by the interior-point method. Reference: that method called directly.
    f = np.load(DATA / "stalling_lp.npz")
    A = sparse.csr_array((f["data"], f["indices"], f["indptr"]), shape=tuple(f["shape"]))
    bounds = [(-1.0, 1.0)] * (A.shape[1] - 1) + [(None, None)]
    lp = polish._solve_lp(f["c"], A, f["b_ub"], bounds)
    reference = linprog(f["c"], A_ub=A, b_ub=f["b_ub"], bounds=bounds, method="highs-ipm")
    assert lp.status == 0 and reference.status == 0
    assert lp.fun == pytest.approx(reference.fun, rel=1e-9, abs=1e-15)
    # feasible to HiGHS's primal feasibility tolerance (1e-7; the polish then evaluates its step exactly)
    assert np.max(A @ lp.x - f["b_ub"]) <= 1e-7 and np.max(np.abs(lp.x[:-1])) <= 1 + 1e-12
