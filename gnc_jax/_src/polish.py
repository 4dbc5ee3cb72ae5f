"""Active-set polish of a max-min configuration by sequential linear programming (SLP).

Annealing leaves the smoothing's footprint: along directions where the margin falls off only
quadratically (non-isolated optima such as the rho = 1 softmax codes for d + 1 < K <= 2d) steps
proportional to the temperature cannot travel the remaining distance. The polish works on the exact
max-min instead. With the terms T(x) of the problem (e.g. the cosines <w_i, w_j> for Tammes) and
x moved in the tangent space of every column, x(u) = normalise(x + B u), each iteration solves the LP

    minimise s  subject to  T_i(x) + grad T_i(x) . u <= s  for every near-active term i,
                            -r <= u <= r  (trust region),

takes the step if the exact max decreases, and adapts r by the ratio of actual to predicted
decrease. Near a vertex solution this converges quadratically; it never makes the exact score
worse. Runs on the host in float64 on one configuration at a time (once per pair, after the batched
solve); the LPs are solved by HiGHS (``highspy``), each from the previous one's basis.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import NamedTuple

import highspy
import numpy as np
from scipy import sparse

from gnc_jax._src.process import float64
from gnc_jax._src.objectives import Problem
from gnc_jax._src.sphere import tangent_bases
from gnc_jax._src.status import Status


# Simplex iterations per LP at most, per row and column: HiGHS's dual simplex can stall on an LP its
# interior-point method solves in seconds (docs/decisions.md).
LP_ITERATIONS_PER_SIZE = 25
# LPs with more columns than this go to the interior-point method first, the faster of the two from
# about 300 columns when both start cold (benchmarks/lp_methods.py, docs/decisions.md); tall LPs suit
# the simplex. An LP with the previous iteration's basis goes to the simplex at every size.
LP_IPM_FIRST_COLUMNS = 300

_STATUS = highspy.HighsModelStatus
_BASIC, _AT_UPPER, _AT_LOWER = (
    highspy.HighsBasisStatus.kBasic,
    highspy.HighsBasisStatus.kUpper,
    highspy.HighsBasisStatus.kLower,
)
_BANNER_SHOWN = []  # HiGHS's banner, shown once per process, went to /dev/null
_BANNER_LOCK = threading.Lock()


class LPResult(NamedTuple):
    status: int  # 0 solved, 1 iteration cap, 4 otherwise (scipy.optimize.linprog's codes)
    message: str
    x: np.ndarray | None
    fun: float
    basis: dict | None  # the optimal basis by key: {"cols": {key: status}, "rows": {key: status}}
    warm: bool = False  # started from the given basis


def _highs() -> highspy.Highs:
    """A silent ``highspy.Highs``. The process's first one prints HiGHS's banner on stdout before any
    option can be set, where it would corrupt a command's JSON: it is made with stdout sent to
    /dev/null."""
    with _BANNER_LOCK:  # two threads redirecting at once could leave stdout at /dev/null
        if not _BANNER_SHOWN:
            sys.stdout.flush()
            saved = os.dup(1)
            try:
                with open(os.devnull, "w") as null:
                    os.dup2(null.fileno(), 1)
                    highspy.Highs()
            finally:
                os.dup2(saved, 1)
                os.close(saved)
            _BANNER_SHOWN.append(True)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    return h


def _warm_basis(start: dict, keys: tuple, b_ub: np.ndarray):
    """The previous LP's basis carried over by key (a term's row, a coordinate's column), new rows
    basic, new columns at their lower bound; then as many basic variables as rows: where there are
    too many, the tightest basic rows (smallest ``b_ub``, new ones first) become active, where too
    few, the loosest active rows become basic. HiGHS repairs a basis that comes out singular."""
    row_keys, col_keys = keys
    cols = [start["cols"].get(k, _AT_LOWER) for k in col_keys]
    rows = [start["rows"].get(k, _BASIC) for k in row_keys]
    excess = sum(s == _BASIC for s in cols) + sum(s == _BASIC for s in rows) - len(rows)
    if excess > 0:  # tightest basic rows, new ones first, become active
        order = sorted(
            (i for i, s in enumerate(rows) if s == _BASIC),
            key=lambda i: (row_keys[i] in start["rows"], b_ub[i]),
        )
        for i in order[:excess]:
            rows[i] = _AT_UPPER
    elif excess < 0:  # loosest nonbasic rows become basic
        order = sorted((i for i, s in enumerate(rows) if s != _BASIC), key=lambda i: -b_ub[i])
        for i in order[:-excess]:
            rows[i] = _BASIC
    basis = highspy.HighsBasis()
    basis.col_status, basis.row_status, basis.valid = cols, rows, True
    return basis


def _solve_lp(c, A_ub, b_ub, bounds, keys=None, start=None) -> LPResult:
    """min c.x subject to A_ub x <= b_ub and ``bounds`` (pairs, None for infinite), by HiGHS. With
    ``start`` (the previous LP's basis by ``keys``: row keys, column keys) the dual simplex starts
    from that basis: successive SLP LPs share most of their optimal basis. Cold, the dual simplex up
    to ``LP_IPM_FIRST_COLUMNS`` columns and the interior-point method (with crossover: a vertex and
    its basis) above. Past ``LP_ITERATIONS_PER_SIZE`` (rows + columns) simplex iterations, the
    interior-point method within the same count (a deterministic cap, unlike a time limit)."""
    A = sparse.csc_array(A_ub)
    m, n = A.shape
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, m
    lp.col_cost_ = np.asarray(c, np.float64)
    lo, hi = np.array([(-np.inf if a is None else a, np.inf if b is None else b) for a, b in bounds]).T
    lp.col_lower_, lp.col_upper_ = lo, hi  # HiGHS's infinity is inf
    lp.row_lower_, lp.row_upper_ = np.full(m, -np.inf), np.asarray(b_ub, np.float64)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, m
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
    h = _highs()
    cap = LP_ITERATIONS_PER_SIZE * (m + n)
    h.setOptionValue("simplex_iteration_limit", cap)
    h.setOptionValue("ipm_iteration_limit", cap)
    h.passModel(lp)
    warm = start is not None and h.setBasis(_warm_basis(start, keys, b_ub)) != highspy.HighsStatus.kError
    simplex = warm or n <= LP_IPM_FIRST_COLUMNS
    h.setOptionValue("solver", "simplex" if simplex else "ipm")
    h.run()
    if simplex and h.getModelStatus() == _STATUS.kIterationLimit:
        h.clearSolver()
        h.setOptionValue("solver", "ipm")
        h.run()
    status = h.getModelStatus()
    if status != _STATUS.kOptimal:
        code = 1 if status == _STATUS.kIterationLimit else 4
        return LPResult(code, h.modelStatusToString(status), None, np.nan, None, warm)
    x = np.asarray(h.getSolution().col_value)
    basis = h.getBasis()
    kept = None
    if keys is not None and basis.valid:
        kept = {"cols": dict(zip(keys[1], basis.col_status)), "rows": dict(zip(keys[0], basis.row_status))}
    return LPResult(0, "", x, float(c @ x), kept, warm)


# A predicted decrease within this many roundings of the max (eps max(|f|, 1)) cannot be told from
# rounding: the linearised problem admits no decrease float64 can see.
ROUNDING_ULPS = 16
# HiGHS's primal and dual feasibility tolerance: the accuracy of the scaled LP, whose numbers are a
# predicted decrease per unit of trust radius; its answer may evaluate this much times r below zero.
LP_TOLERANCE = 1e-7
# The smallest trust radius at which that means stationarity: sqrt(eps), where a step's linearisation
# error (~ r^2) reaches the rounding of the max. Below it the polish has stalled.
MIN_RADIUS = float(np.sqrt(np.finfo(np.float64).eps))


class PolishResult(NamedTuple):
    params: dict  # the polished configuration (never worse than the given one)
    status: Status  # STATIONARY, STALLED, MAX_STEPS or FAILED (see below)
    residual: float  # the last LP's predicted decrease / trust radius (nan if none was solved)
    note: str  # the LP solver's message when it failed, else ''


@float64
def polish(problem: Problem, params: dict, max_iter: int = 100, radius: float = 1e-3) -> PolishResult:
    """SLP polish of one unpadded configuration.

    Status, with nu = ``ROUNDING_ULPS`` eps max(|f|, 1) the resolution of the max f: ``stationary``
    when the LP predicts no decrease above nu within a trust radius r >= ``MIN_RADIUS`` (no
    first-order descent float64 can see, to the LP's tolerance: a rate of decrease of at most
    nu / r <= 2.4e-7 plus ``LP_TOLERANCE``); ``stalled`` when the trust region shrank below
    ``MIN_RADIUS`` before that; ``max_steps`` after ``max_iter`` iterations; ``failed`` when HiGHS
    did not solve an LP, or returned a point worse than the zero step by more than its own tolerance
    (``LP_TOLERANCE`` r + nu; the note says which). The residual is the last LP's predicted decrease
    divided by r: a rate, comparable at every radius.

    Args:
      problem: the arrangement problem (its ``terms``; the max over distinct pairs is minimised).
      params: dict of float64 arrays (d, columns) with unit columns (W has K columns).
      max_iter: LP iterations at most.
      radius: initial trust-region radius (tangent coordinates, infinity norm).
    """
    # Long because the SLP loop's LP, trust-region update and status share the iterate.
    names = tuple(sorted(params))
    X = {n: np.asarray(params[n], np.float64) for n in names}
    d, K = X["W"].shape
    off = np.asarray(problem.term_mask(np.ones(K, dtype=bool)))

    def value(X):
        return float(np.max(np.asarray(problem.terms(X))[off]))

    f = value(X)
    r, rate, basis = radius, float("nan"), None
    for _ in range(max_iter):
        T = np.asarray(problem.terms(X))
        # A term depends on at most 3 columns with gradient norm <= 2 each, so a step with
        # |u|_inf <= r moves it by at most 6 sqrt(d - 1) r to first order: those are the candidates.
        rows, cols = np.nonzero(off & (f - 8 * np.sqrt(d - 1) * r - 1e-12 <= T))
        grads = problem.term_grads(X, rows, cols)
        T_act = T[rows, cols]
        # Chain rule into tangent coordinates u (per column, d - 1 each); the same bases move X below.
        bases = {n: tangent_bases(X[n]) for n in names}
        blocks = [np.einsum("adk,kde->ake", grads[n], bases[n]).reshape(len(rows), -1) for n in names]
        A = np.concatenate(blocks, axis=1)
        # Scaled LP (O(1) numbers at every radius): u = r v, |v|_inf <= 1, model (T - f)/r + A v <= s.
        # Only the coordinates some candidate term depends on enter it, as a sparse matrix (a term
        # touches at most 3 columns): for K = 100 that is a few percent of the dense LP.
        used = np.flatnonzero(np.any(A != 0, axis=0))
        n_u = len(used)
        c = np.zeros(n_u + 1)
        c[-1] = 1.0
        A_ub = sparse.hstack([sparse.csr_array(A[:, used]), -np.ones((len(rows), 1))], format="csr")
        b_ub = (f - T_act) / r
        # Rows keyed by their term, columns by their coordinate (the max s last): the next LP starts
        # from this one's basis where they recur.
        keys = ((rows * T.shape[1] + cols).tolist(), used.tolist() + [-1])
        lp = _solve_lp(c, A_ub, b_ub, [(-1.0, 1.0)] * n_u + [(None, None)], keys, basis)
        if lp.status != 0:
            return PolishResult(X, Status.FAILED, rate, f"LP: {lp.message}")
        u = np.zeros(A.shape[1])
        u[used] = r * lp.x[:-1]
        basis = lp.basis
        predicted = f - np.max(T_act + A @ u)  # the linear model's decrease, evaluated exactly
        rate, nu = predicted / r, ROUNDING_ULPS * np.finfo(np.float64).eps * max(abs(f), 1.0)
        if predicted < -(LP_TOLERANCE * r + nu):  # the zero step is feasible: beyond the LP's accuracy
            return PolishResult(X, Status.FAILED, rate, f"LP: {predicted:.1e} below the zero step's decrease")
        if predicted <= nu:  # none above rounding (a negative one is the LP's tolerance)
            return PolishResult(X, Status.STATIONARY if r >= MIN_RADIUS else Status.STALLED, rate, "")
        X_new, i = {}, 0
        for n in names:
            cols = X[n].shape[1]
            step = np.einsum("kde,ke->dk", bases[n], u[i : i + cols * (d - 1)].reshape(cols, d - 1))
            Y = X[n] + step
            X_new[n] = Y / np.linalg.norm(Y, axis=0)
            i += cols * (d - 1)
        f_new = value(X_new)
        ratio = (f - f_new) / predicted
        if f_new < f:
            X, f = X_new, f_new
        r = r * 2 if ratio > 0.75 else r / 4 if ratio < 0.25 else r
    return PolishResult(X, Status.MAX_STEPS, rate, "")
