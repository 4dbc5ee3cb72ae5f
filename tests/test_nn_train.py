"""End to end on tiny configurations: the pipeline trains, the metrics move the right way, a seed
fixes the run, bad input is refused."""

import json

import numpy as np
import pytest

import gnc_jax
from gnc_jax import nn
from gnc_jax._src import cli, metrics, theory

SMALL = nn.TrainSettings(epochs=25, batch_size=16, learning_rate=1e-2)


def test_datasets_are_offline_stratified_and_seeded():
    a, b = nn.digits(seed=1), nn.digits(seed=1)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert a.x_train.shape[1:] == (8, 8, 1) and a.num_classes == 10
    assert len(a.x_train) + len(a.x_test) == 1797
    counts = np.bincount(a.y_test)
    assert counts.min() >= 40  # every class in the test split
    four = nn.digits([0, 1, 6, 8])
    assert set(np.unique(four.y_train)) == {0, 1, 2, 3}
    g = nn.gaussian_mixture(100, dim=20, per_class=8, seed=0)
    assert g.num_classes == 100 and g.x_train.shape == (600, 20)


@pytest.mark.slow
def test_training_collapses_features_on_a_gaussian_mixture():
    data = nn.gaussian_mixture(6, dim=10, per_class=40, separation=4.0, seed=0)
    settings = nn.TrainSettings(epochs=60, batch_size=16, learning_rate=1e-2)
    model = nn.make_network(data, 3, 0.1, width=32, seed=0)
    hist = nn.train(model, data, settings, seed=0, rho_hat=1.0)
    first, middle, last = hist[0], hist[len(hist) // 2], hist[-1]
    assert last["train_accuracy"] > 0.95 > first["train_accuracy"]
    assert last["ncc_train_accuracy"] > 0.95
    assert last["gnc1"] < 0.3 * first["gnc1"]
    assert last["gnc3"] < 0.3 * first["gnc3"]
    # the margin first drops while features separate, then grows towards the octahedron's rho* = 1
    assert last["gnc2"] > middle["gnc2"] > first["gnc2"]
    again = nn.train(nn.make_network(data, 3, 0.1, width=32, seed=0), data, settings, seed=0, rho_hat=1.0)
    assert again[-1]["gnc1"] == last["gnc1"]  # same seed, same run


def test_cmf_classifier_trains():
    data = nn.gaussian_mixture(5, dim=8, per_class=40, separation=4.0, seed=1)
    model = nn.make_network(data, 3, 0.1, classifier="cmf", width=32, seed=0)
    hist = nn.train(model, data, SMALL, seed=0)
    assert hist[-1]["train_accuracy"] > 0.95 and hist[-1]["gnc3"] < hist[0]["gnc3"]


@pytest.mark.slow
def test_measuring_every_few_epochs_leaves_the_training_as_it_was():
    data = nn.gaussian_mixture(6, dim=8, per_class=20, separation=4.0, seed=2)
    W = np.hstack([np.eye(3), -np.eye(3)])  # the octahedron as a fixed classifier

    def run(measure_every):
        model = nn.make_network(data, 3, 0.1, classifier="fixed", W=W, width=16, seed=0)
        settings = nn.TrainSettings(epochs=6, batch_size=16, measure_every=measure_every)
        return {row["epoch"]: row for row in nn.train(model, data, settings, seed=0)}

    every, sparse = run(1), run(4)
    assert sorted(sparse) == [0, 4, 6]
    for epoch in (4, 6):
        for name in ("train_loss", "test_accuracy", "gnc1", "gnc2", "gnc3", "ncc_test_accuracy"):
            assert sparse[epoch][name] == every[epoch][name]
    assert sparse[0]["measure_s"] == 0 < sparse[4]["measure_s"] < sparse[4]["wall_s"]
    assert sparse[6]["batch_loss"] == pytest.approx((every[5]["batch_loss"] + every[6]["batch_loss"]) / 2)
    with pytest.raises(ValueError, match="measure_every"):
        nn.TrainSettings(measure_every=0)


def test_a_fixed_classifier_is_certified_once(monkeypatch):
    data = nn.gaussian_mixture(6, dim=8, per_class=10, separation=4.0, seed=2)
    W = np.hstack([np.eye(3), -np.eye(3)])
    calls, gnc2 = [], metrics.gnc2
    monkeypatch.setattr(metrics, "gnc2", lambda A: calls.append(1) or gnc2(A))
    model = nn.make_network(data, 3, 0.1, classifier="fixed", W=W, width=8, seed=0)
    rows = nn.train(model, data, nn.TrainSettings(epochs=3, batch_size=16), seed=0)
    assert len(rows) == 4 and len(calls) == 1  # its margin cannot change: measured once, not per row
    rho = gnc_jax.softmax_code_margin(W)
    assert all(row["gnc2"] == pytest.approx(rho, abs=1e-12) for row in rows)


@pytest.mark.slow
def test_verify_network_cli_writes_metrics(tmp_path, capsys):
    out = tmp_path / "run"
    rc = cli.main(
        [
            "verify-network",
            "--dataset",
            "gaussian",
            "--classes",
            "4",
            "--d",
            "2",
            "--tau",
            "0.2",
            "--epochs",
            "2",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    res = json.loads((out / "metrics.json").read_text())
    assert [r["epoch"] for r in res["epochs"]] == [0, 1, 2]
    assert res["rho_hat"] == pytest.approx(theory.softmax_code_closed_form(2, 4)[0], abs=1e-9)
    final = json.loads(capsys.readouterr().out)
    assert final["epoch"] == 2
    # a fixed epoch budget with finite losses: max_steps, in the store and on stdout
    assert (res["status"], final["status"]) == ("max_steps", "max_steps")
    assert res["status_note"] == "ran its 2 epochs (no convergence test)"


@pytest.mark.filterwarnings("error:Explicitly requested dtype float64")
def test_the_api_reports_the_final_classifier_in_float64():
    # Called from Python (outside the CLI's float64 scope), the final W is read in float64 as every
    # metric is, not truncated to float32: unit columns to rounding.
    from gnc_jax.nn import verify

    res = verify.verify_network("gaussian", d=2, tau=0.2, classes=4, epochs=1, progress=None)
    np.testing.assert_allclose(np.linalg.norm(np.array(res["W"]), axis=0), 1.0, atol=1e-14)
    with pytest.raises(ValueError, match="model must be a gnc_jax.nn Network"):
        nn.classifier_weights(np.eye(2))


def test_training_status_names_the_first_non_finite_value():
    from gnc_jax.nn.verify import training_status

    rows = [{"epoch": 0, "batch_loss": None, "gnc1": 0.5}, {"epoch": 1, "batch_loss": 1.0, "gnc1": 0.4}]
    assert training_status(rows)["status"] == "max_steps"
    rows.append({"epoch": 2, "batch_loss": float("nan"), "gnc1": float("inf")})
    got = training_status(rows)
    assert (got["status"], got["status_note"]) == ("nonfinite", "batch_loss is not finite at epoch 2")
    assert np.isnan(got["residual"])


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--dataset", "mnist"], "invalid choice"),
        (["--d", "1"], "--d must be >= 2"),
        (["--tau", "0"], "--tau values must be finite and > 0"),
        (["--tau", "-1"], "--tau"),
        (["--classes", "11"], "classes must be an integer in 2..10"),
        (["--epochs", "0"], "--epochs must be >= 1"),
        (["--assignment", "0,1"], "--assignment applies"),
        (["--tau", "0.1,0.2"], "--tau takes one value"),
        (["--tau-start", "0"], "--tau-start values must be finite and > 0"),
        (["--weight-decay", "-1"], "--weight-decay values must be finite and >= 0"),
        (["--classifier", "fixed", "--classes", "4", "--d", "2", "--assignment", "0,0,1,2"], "permutation"),
        (["--classifier", "fixed", "--d", "2", "--assignment", "0,1,2,3"], "permutation of 0..9"),
    ],
)
def test_verify_network_bad_input(tmp_path, capsys, monkeypatch, argv, match):
    # Exit 2 means nothing was computed: neither the softmax code's solve nor training ran.
    from gnc_jax._src import batch
    from gnc_jax.nn import verify

    ran = []
    monkeypatch.setattr(batch, "solve_softmax_code", lambda *a, **k: ran.append("solve"))
    monkeypatch.setattr(verify, "train", lambda *a, **k: ran.append("train"))
    rc = cli.main(["verify-network", "--out", str(tmp_path / "x"), "--epochs", "1", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and match in err and len(err.strip().splitlines()) == 1
    assert ran == []


def test_a_bad_assignment_is_refused_by_the_api_before_the_solve(monkeypatch):
    from gnc_jax._src import batch
    from gnc_jax.nn import verify

    monkeypatch.setattr(batch, "solve_softmax_code", lambda *a, **k: pytest.fail("solved before checking"))
    with pytest.raises(ValueError, match="assignment must be a permutation of 0..3"):
        verify.verify_network("digits", d=2, classes=4, classifier="fixed", assignment=[0, 0, 1, 2])
    with pytest.raises(ValueError, match="assignment applies to the fixed classifier only"):
        verify.verify_network("digits", d=2, classes=4, assignment=[0, 1, 2, 3])


def test_square_assignments_are_the_three_antipodal_pairings():
    from gnc_jax.nn.verify import softmax_code_classifier, square_assignments

    seen = set()
    for j, perm in square_assignments().items():
        W = softmax_code_classifier(2, 4, perm)
        G = W.T @ W
        others = [k for k in range(1, 4) if k != j]
        assert G[0, j] == pytest.approx(-1, abs=1e-9)  # class j opposite class 0
        assert G[others[0], others[1]] == pytest.approx(-1, abs=1e-9)  # the other two opposite
        seen.add(frozenset([frozenset([0, j]), frozenset(others)]))
    assert len(seen) == 3


def test_nearest_assignment_finds_a_hidden_permutation():
    rng = np.random.default_rng(3)
    W = rng.normal(size=(5, 40))
    W /= np.linalg.norm(W, axis=0)
    hidden = rng.permutation(40)
    means = 2.0 * W[:, hidden] + 0.01 * rng.normal(size=(5, 40))  # class k's mean near w_hidden[k]
    assert nn.nearest_assignment(W, means) == hidden.tolist()
    crowded = np.tile(W[:, :1], (1, 40))  # every mean at one point: still a permutation
    assert sorted(nn.nearest_assignment(W, crowded)) == list(range(40))
    with pytest.raises(ValueError, match="means must have W's shape"):
        nn.nearest_assignment(W, means[:, :39])
    with pytest.raises(ValueError, match="means"):
        nn.nearest_assignment(W, np.full((5, 40), np.nan))


def test_temperature_continuation_schedule():
    s = nn.TrainSettings(epochs=10, tau_start=0.5, anneal_fraction=0.5)
    taus = [0.05 / s.temperature_scale(0.05, e) for e in range(1, 11)]
    # geometric from tau_start to tau over the first 5 epochs, then held
    np.testing.assert_allclose(taus[:6], 0.5 * (0.1 ** (np.arange(6) / 5)), rtol=1e-12)
    np.testing.assert_allclose(taus[5:], 0.05, rtol=1e-12)
    assert nn.TrainSettings().temperature_scale(0.05, 1) == 1.0  # no continuation by default
    assert nn.TrainSettings(tau_start=0.01).temperature_scale(0.05, 1) == 1.0  # never heats up
    with pytest.raises(ValueError, match="anneal_fraction"):
        nn.TrainSettings(anneal_fraction=0)
