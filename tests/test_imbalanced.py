"""Imbalanced UFM with non-negative features (gnc_jax.related.imbalanced, paper 002).

References independent of the formulas under test: the objective evaluated at the claimed
configuration, its projected gradient (first-order optimality), the objective at random and
perturbed feasible points (lower bound), a brute-force 1-d minimisation of each class's term, and
the solver run from random starts.
"""

import dataclasses
import json

import numpy as np
import pytest

from gnc_jax._src import cli, metrics
from gnc_jax.related import imbalanced as imb

LAM = 0.01
# lambda_h in {0.01, 0.06}: the collapse threshold n* = N^2 lambda_w lambda_h K / (K - 1) moves from
# below every class to above the smallest one (or two) of each imbalanced profile.
PROFILES = [(30, 30, 6, 3), (40, 20, 10, 2), (50, 40, 3, 2), (20, 20, 20, 20)]
LAMBDA_H = [0.01, 0.06]


@pytest.fixture(scope="module")
def grid():
    return imb.solve_ufm_imbalanced(
        PROFILES, 4, LAM, LAMBDA_H, seed=0, solver=imb.ImbalancedSettings(steps=6000, hold_steps=6000)
    )


def _threshold(counts, lw, lh):
    N, K = sum(counts), len(counts)
    return N**2 * lw * lh * K / (K - 1)


@pytest.mark.slow
@pytest.mark.parametrize("counts", PROFILES)
@pytest.mark.parametrize("lambda_h", LAMBDA_H)
def test_closed_form_configuration_is_stationary_and_attains_its_value(counts, lambda_h):
    pred = imb.predict_imbalanced(counts, LAM, lambda_h)
    for d in (pred.min_dimension, 6):
        W, means = pred.configuration(d)
        H = np.repeat(means, counts, axis=1)
        assert imb.imbalanced_loss(W, H, counts, LAM, lambda_h) == pytest.approx(pred.lower_bound, abs=1e-14)
        assert pred.loss == pred.lower_bound
        assert imb.kkt_residual(W, H, counts, LAM, lambda_h) < 1e-13
    np.testing.assert_array_equal(pred.collapsed, np.asarray(counts) <= _threshold(counts, LAM, lambda_h))


def test_each_margin_minimises_its_class_term_by_brute_force():
    counts, lw, lh = (200, 200, 30, 8), 5e-3, 2e-2
    pred = imb.predict_imbalanced(counts, lw, lh)
    n, N, K = np.asarray(counts, float), sum(counts), len(counts)
    p = np.linspace(0.0, 10.0, 2_000_001)
    for k in range(K):
        f = n[k] / N * np.log1p((K - 1) * np.exp(-p)) + np.sqrt(lw * lh * n[k] * (K - 1) / K) * p
        assert pred.margins[k] == pytest.approx(p[np.argmin(f)], abs=1e-5)
    assert pred.collapsed.tolist() == [False, False, False, True]


def test_closed_form_is_a_lower_bound_at_random_and_perturbed_feasible_points():
    rng = np.random.default_rng(0)
    counts, lw, lh = (30, 12, 5, 2), 0.02, 0.01
    pred = imb.predict_imbalanced(counts, lw, lh)
    W0, M0 = pred.configuration(5)
    H0 = np.repeat(M0, counts, axis=1)
    for _ in range(50):
        W = rng.normal(size=(5, 4)) * rng.uniform(0.1, 5)
        H = np.abs(rng.normal(size=(5, sum(counts)))) * rng.uniform(0.01, 2)
        assert imb.imbalanced_loss(W, H, counts, lw, lh) > pred.lower_bound
        eps = rng.uniform(1e-4, 1e-1)
        Wp = W0 + eps * rng.normal(size=W0.shape)
        Hp = np.maximum(H0 + eps * rng.normal(size=H0.shape), 0.0)
        assert imb.imbalanced_loss(Wp, Hp, counts, lw, lh) > pred.lower_bound


@pytest.mark.slow
def test_solver_matches_the_closed_form_on_both_sides_of_the_threshold(grid):
    assert len(grid) == len(PROFILES) * len(LAMBDA_H)
    saw_collapse = saw_none = False
    for s in grid:
        r, pred = s.report, s.prediction
        assert s.status == "optimal", s.summary()
        assert abs(s.optimality_gap) < 1e-12
        assert r["collapse_matches"]
        assert r["norm_error"] < 1e-8 and r["angle_error_deg"] < 1e-6
        assert r["orthogonality"] < 1e-10 and r["nc1"] < 1e-20 and r["alignment_error"] < 1e-8
        assert r["collapsed_classifier_spread"] < 1e-8
        saw_collapse |= pred.collapsed.any()
        saw_none |= not pred.collapsed.any() and min(s.counts) < max(s.counts)
        # the solver's vanishing minority means sit exactly where the threshold says
        np.testing.assert_array_equal(
            r["collapsed"], np.asarray(s.counts) <= _threshold(s.counts, LAM, s.lambda_h)
        )
    assert saw_collapse and saw_none


@pytest.mark.slow
def test_two_collapsed_minorities_merge_into_one_classifier(grid):
    s = next(s for s in grid if s.counts == (50, 40, 3, 2) and s.lambda_h == 0.06)
    assert s.report["collapsed"].tolist() == [False, False, True, True]
    np.testing.assert_allclose(s.W[:, 2], s.W[:, 3], atol=1e-8)
    np.testing.assert_allclose(s.H[:, -5:], 0.0, atol=1e-12)
    assert s.report["classifier_norms"][0] > s.report["classifier_norms"][1] > s.report["classifier_norms"][2]


@pytest.mark.slow
def test_balanced_sizes_give_an_orthogonal_frame_and_a_simplex_etf_classifier(grid):
    for s in (s for s in grid if s.counts == (20, 20, 20, 20)):
        means = metrics.class_means(s.H, np.repeat(np.arange(4), 20), 4)
        G = means.T @ means
        np.testing.assert_allclose(G, G[0, 0] * np.eye(4), atol=1e-10 * G[0, 0])  # orthogonal frame
        assert metrics.nc2_etf_distance(s.W) < 1e-10  # simplex ETF
        centred = means - means.mean(axis=1, keepdims=True)
        assert metrics.nc2_etf_distance(centred) < 1e-10
        cos = np.sum(s.W * centred, axis=0) / np.linalg.norm(s.W, axis=0) / np.linalg.norm(centred, axis=0)
        np.testing.assert_allclose(cos, 1.0, atol=1e-10)  # self-duality after centring


def test_below_the_needed_dimension_the_smallest_class_is_sacrificed():
    counts, lam = (20, 20, 5, 2), 5e-3
    pred = imb.predict_imbalanced(counts, lam, lam, d=3)
    assert pred.min_dimension == 4 and pred.forced_collapse.tolist() == [False, False, False, True]
    W, means = pred.configuration()
    assert W.shape == (3, 4)
    H = np.repeat(means, counts, axis=1)
    assert pred.loss == pytest.approx(imb.imbalanced_loss(W, H, counts, lam, lam), abs=1e-14)
    assert imb.kkt_residual(W, H, counts, lam, lam) < 1e-13
    assert pred.loss > pred.lower_bound + 0.03
    s = imb.solve_ufm_imbalanced(
        counts, 3, lam, lam, seed=0, solver=imb.ImbalancedSettings(steps=6000, hold_steps=6000)
    )
    assert s.status == "stationary" and s.optimality_gap > 0.03  # no certificate below min_dimension
    assert s.loss == pytest.approx(pred.loss, abs=1e-12)
    assert s.report["collapse_matches"] and s.report["norm_error"] < 1e-8


@pytest.mark.slow
def test_a_spurious_kkt_point_is_not_reported_as_optimal():
    # The trap: no continuation and a small start stop where minority features are 0.
    counts, lam = (200, 200, 30, 8), 5e-3
    trap = imb.solve_ufm_imbalanced(
        counts,
        8,
        lam,
        lam,
        seed=0,
        solver=imb.ImbalancedSettings(
            restarts=1, lambda_start=1.0, init_scale=0.1, steps=3000, hold_steps=6000
        ),
    )
    # a KKT point (residual at rounding) above the bound: stationary, not optimal
    assert trap.optimality_gap > 0.01 and trap.status == "stationary" and trap.kkt_residual < 1e-12
    assert trap.loss == pytest.approx(0.6148, abs=1e-3)
    good = imb.solve_ufm_imbalanced(
        counts, 8, lam, lam, seed=0, solver=imb.ImbalancedSettings(restarts=2, steps=6000, hold_steps=6000)
    )
    assert good.status == "optimal" and good.loss == pytest.approx(0.5897558468, abs=1e-9)


def test_a_bound_that_breaks_is_an_error_not_optimal(monkeypatch):
    # A deliberately wrong bound (the true one + 0.01): the solver's feasible point lies below it, which
    # must be reported as an error naming the instance, never as a gap < 0 labelled 'optimal'.
    true_predict = imb.predict_imbalanced

    def wrong(*args, **kwargs):
        pred = true_predict(*args, **kwargs)
        return dataclasses.replace(pred, lower_bound=pred.lower_bound + 0.01)

    monkeypatch.setattr(imb, "predict_imbalanced", wrong)
    with pytest.raises(
        RuntimeError, match=r"counts=\(30, 30, 6, 3\), d=4.*below the closed-form lower bound"
    ):
        imb.solve_ufm_imbalanced(
            (30, 30, 6, 3), 4, LAM, 0.06, seed=0, solver=imb.ImbalancedSettings(steps=300, hold_steps=300)
        )


@pytest.mark.slow
def test_same_seed_same_answer_and_batch_agrees_with_single(grid):
    a = imb.solve_ufm_imbalanced(
        (40, 20, 10, 2), 4, LAM, 0.06, seed=0, solver=imb.ImbalancedSettings(steps=6000, hold_steps=6000)
    )
    b = imb.solve_ufm_imbalanced(
        (40, 20, 10, 2), 4, LAM, 0.06, seed=0, solver=imb.ImbalancedSettings(steps=6000, hold_steps=6000)
    )
    np.testing.assert_array_equal(a.W, b.W)
    batched = next(s for s in grid if s.counts == (40, 20, 10, 2) and s.lambda_h == 0.06)
    assert a.loss == pytest.approx(batched.loss, abs=1e-13)


def test_float32_reaches_the_bound_to_float32_accuracy():
    s = imb.solve_ufm_imbalanced(
        (30, 30, 6, 3),
        4,
        LAM,
        0.06,
        seed=1,
        solver=imb.ImbalancedSettings(dtype="float32", steps=3000, hold_steps=3000),
    )
    assert s.W.dtype == np.float64 and -1e-12 <= s.optimality_gap < 1e-5
    assert s.report["collapse_matches"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"counts": (5, 0, 3)}, "counts must be >= 1"),
        ({"counts": (5, -2, 3)}, "counts must be >= 1"),
        ({"counts": (5, 2.5, 3)}, "counts must hold integers"),
        ({"counts": (5,)}, "counts must be a sequence of K >= 2"),
        ({"counts": [(5, 2, 3), (5, 2)]}, "same K"),
        ({"counts": []}, "counts must be K class sizes"),
        ({"lambda_w": 0.0}, "lambda_w must be finite and > 0"),
        ({"lambda_h": -1e-3}, "lambda_h must be finite and > 0"),
        ({"lambda_h": float("nan")}, "lambda_h must be finite"),
        ({"d": 1}, "d must be >= 2"),
        ({"solver": {"restarts": 4}}, "solver must be ImbalancedSettings or None"),
    ],
)
def test_bad_input_names_the_argument(kwargs, match):
    args = {"counts": (5, 2, 3), "d": 3, "lambda_w": 0.01, "lambda_h": 0.01, "seed": 0} | kwargs
    with pytest.raises(ValueError, match=match):
        imb.solve_ufm_imbalanced(
            args.pop("counts"), args.pop("d"), args.pop("lambda_w"), args.pop("lambda_h"), **args
        )


@pytest.mark.parametrize(
    "fields, match",
    [
        ({"restarts": 0}, "restarts must be an integer >= 1"),
        ({"lambda_start": 2.0}, "lambda_start must be in"),
    ],
)
def test_bad_settings_name_the_field(fields, match):
    with pytest.raises(ValueError, match=match):
        imb.ImbalancedSettings(**fields)


def test_prediction_and_report_reject_bad_input():
    with pytest.raises(ValueError, match="lambda_w"):
        imb.predict_imbalanced((3, 2), 0, 1)
    pred = imb.predict_imbalanced((3, 2), 0.1, 0.1)
    with pytest.raises(ValueError, match="d must be >= "):
        pred.configuration(0)
    with pytest.raises(ValueError, match="H must be"):
        imb.geometry_report(np.ones((2, 2)), np.ones((2, 4)), (3, 2), 0.1, 0.1)


@pytest.mark.slow
def test_cli_prints_solver_beside_closed_form_and_saves(tmp_path, capsys):
    rc = cli.main(
        ["solve", "ufm-imbalanced", "--d", "4", "--K", "4", "--counts", "40,20,10,2", "--lambda-w", "0.01",
         "--lambda-h", "0.06", "--steps", "6000", "--format", "json", "--save", str(tmp_path)]
    )  # fmt: skip
    assert rc == 0
    row = json.loads(capsys.readouterr().out)
    assert row["status"] == "optimal" and row["collapsed"] == row["predicted_collapsed"] == [
        False,
        False,
        False,
        True,
    ]
    np.testing.assert_allclose(row["feature_norms"], row["predicted_feature_norms"], rtol=1e-8, atol=1e-12)
    W = np.load(tmp_path / "ufm-imbalanced_d4_K4_n40-20-10-2_lw0.01_lh0.06_W.npy")
    H = np.load(tmp_path / "ufm-imbalanced_d4_K4_n40-20-10-2_lw0.01_lh0.06_H.npy")
    assert W.shape == (4, 4) and H.shape == (4, 72) and H.min() >= 0
    assert imb.imbalanced_loss(W, H, (40, 20, 10, 2), 0.01, 0.06) == pytest.approx(row["loss"], abs=1e-15)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--counts", "4,3,2"], "has 3 class sizes but --K is 4"),
        (["--counts", "4,3,2,0"], "--counts values must be >= 1"),
        (["--counts", "4,3,2,x"], "--counts must be comma-separated integers"),
        (["--counts", "4,3,2,1", "--lambda-h", "0"], "--lambda-h values must be finite and > 0"),
        (["--counts", "4,3,2,1", "--tau", "0.1"], "--tau does not apply to ufm-imbalanced"),
        (["--lambda-h", "0.1"], "needs --counts"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(argv, message, capsys):
    base = ["solve", "ufm-imbalanced", "--d", "4", "--K", "4", "--lambda-w", "0.01"]
    if "--lambda-h" not in argv:
        argv = argv + ["--lambda-h", "0.01"]
    assert cli.main(base + argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
