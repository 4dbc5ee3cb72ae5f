"""The SLP polish's LP solves (gnc_jax._src.polish)."""

import subprocess
import sys

import numpy as np
import pytest
from conftest import DATA
from scipy import sparse
from scipy.optimize import linprog

from gnc_jax._src import polish


@pytest.mark.parametrize(
    "path",
    ["interior point first", pytest.param("simplex capped, then interior point", marks=pytest.mark.slow)],
)
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


def test_each_lp_started_from_the_previous_basis_reaches_the_cold_optimum(monkeypatch):
    # The LPs of a Tammes polish at (5, 40) from 3e-3 away: rows (terms) and columns (coordinates)
    # come and go between iterations, so the carried basis is completed or trimmed to a count of
    # basic variables equal to the rows. Each warm-started LP's optimum is the cold interior-point
    # optimum of the same LP (scipy's linprog, an independent call of HiGHS).
    from gnc_jax._src.objectives import TAMMES

    seen, solve = [], polish._solve_lp

    def record(c, A_ub, b_ub, bounds, keys, start):
        lp = solve(c, A_ub, b_ub, bounds, keys, start)
        seen.append((c, A_ub, b_ub, bounds, keys, start, lp))
        return lp

    monkeypatch.setattr(polish, "_solve_lp", record)
    rng = np.random.default_rng(3)
    W = rng.standard_normal((5, 40))
    polish.polish(TAMMES, {"W": _perturbed(W / np.linalg.norm(W, axis=0), 0, 3e-3)}, max_iter=12)
    assert len(seen) >= 6 and seen[0][5] is None and all(s[6].warm for s in seen[1:])
    changed = 0
    for c, A, b, bounds, keys, start, lp in seen:
        reference = linprog(c, A_ub=A, b_ub=b, bounds=bounds, method="highs-ipm")
        assert lp.status == 0 and reference.status == 0
        assert lp.fun == pytest.approx(reference.fun, rel=1e-9, abs=1e-12)
        assert np.max(A @ lp.x - b) <= 1e-7
        if start is not None:
            basis = polish._warm_basis(start, keys, b)
            basic = sum(s == polish._BASIC for s in list(basis.col_status) + list(basis.row_status))
            assert basic == A.shape[0]
            changed += set(keys[0]) != set(start["rows"])
    assert changed  # some LP's terms differ from the previous one's


def test_highs_prints_nothing_on_stdout():
    # highspy prints a banner when a process makes its first HiGHS; a command's stdout (its JSON) must
    # not carry it.
    code = "from gnc_jax._src import polish; polish._highs(); polish._highs(); print('only this')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "only this\n"


def _perturbed(W, seed, size):
    rng = np.random.default_rng(seed)
    W = W + size * rng.standard_normal(W.shape)
    return W / np.linalg.norm(W, axis=0)


def test_a_perturbed_octahedron_is_polished_back_to_a_stationary_point():
    # Stationary side: the octahedron (max cos 0, Tammes optimum for K = 6 = 2d) from 1e-3 away.
    from gnc_jax._src.objectives import TAMMES
    from gnc_jax._src.status import Status

    octahedron = np.hstack([np.eye(3), -np.eye(3)])
    res = polish.polish(TAMMES, {"W": _perturbed(octahedron, 0, 1e-3)})
    W = res.params["W"]
    rate_bound = polish.ROUNDING_ULPS * np.finfo(float).eps / polish.MIN_RADIUS  # 2.4e-7
    assert res.status == Status.STATIONARY and abs(res.residual) <= rate_bound
    assert np.max(W.T @ W - 2 * np.eye(6)) <= 1e-12  # the octahedron's 0, reached


def test_a_collapsed_trust_region_with_a_predicted_decrease_is_stalled_not_stationary():
    # Stalled side: gradients that point the wrong way (and 1e-3 of their size) make the LP predict
    # a decrease of rate ~1e-3 that no step realises; the trust region shrinks until the predicted
    # decrease is below float64's resolution of the max. An absolute threshold on the predicted
    # decrease (not scaled by the radius) would call this stationary.
    from gnc_jax._src.objectives import TAMMES
    from gnc_jax._src.status import Status

    def wrong_grads(X, rows, cols):
        return {k: -1e-3 * v for k, v in TAMMES.term_grads(X, rows, cols).items()}

    W = _perturbed(np.hstack([np.eye(3), -np.eye(3)]), 1, 1e-2)
    res = polish.polish(TAMMES._replace(term_grads=wrong_grads), {"W": W}, max_iter=500)
    assert res.status == Status.STALLED and res.residual > 1e-4
    np.testing.assert_array_equal(res.params["W"], W)  # no step was taken: none decreased the max


def test_the_iteration_cap_and_a_failed_lp_are_reported(monkeypatch):
    from types import SimpleNamespace

    from gnc_jax._src.objectives import TAMMES
    from gnc_jax._src.status import Status

    W = _perturbed(np.hstack([np.eye(3), -np.eye(3)]), 2, 1e-2)
    capped = polish.polish(TAMMES, {"W": W}, max_iter=1)
    assert capped.status == Status.MAX_STEPS and capped.residual > 1e-4
    fail = SimpleNamespace(status=4, message="numerical difficulties", x=None)
    monkeypatch.setattr(polish, "_solve_lp", lambda *a: fail)
    failed = polish.polish(TAMMES, {"W": W})
    assert failed.status == Status.FAILED and failed.note == "LP: numerical difficulties"


@pytest.mark.parametrize("size, status", [(1e-9, "stationary"), (1.0, "failed")])
def test_an_lp_answer_below_the_zero_step_is_failed_only_beyond_the_lps_tolerance(monkeypatch, size, status):
    # At the exact octahedron (max cos 0, every pair of non-antipodal points active) a step v = size
    # in every tangent coordinate raises some active cosine: the LP's answer is worse than the zero
    # step. By 1e-9 of the radius HiGHS may answer so (its feasibility tolerance is 1e-7 there):
    # no decrease, stationary. By the whole radius the LP was not solved: failed, with the note.
    from gnc_jax._src.objectives import TAMMES

    solve = polish._solve_lp

    def short_of_zero(c, A_ub, b_ub, bounds, *start):
        lp = solve(c, A_ub, b_ub, bounds, *start)
        return lp._replace(x=np.append(np.full(len(c) - 1, size), lp.x[-1]))

    monkeypatch.setattr(polish, "_solve_lp", short_of_zero)
    res = polish.polish(TAMMES, {"W": np.hstack([np.eye(3), -np.eye(3)])})
    assert res.status == status and res.residual < 0
    assert res.note.startswith("LP: ") == (status == "failed")
