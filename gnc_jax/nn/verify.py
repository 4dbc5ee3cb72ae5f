"""``gnc-jax verify-network``: train a network and record GNC against the core solver's best found rho.

Writes ``OUT/metrics.json`` after every epoch (atomically: an interrupted run keeps every finished
epoch) with the run's settings, the reference rho-hat(d, K) (key ``rho_hat``: the certified margin of
the best code found, a lower bound on rho*), per-epoch metrics and the final ones, then
``OUT/metrics.png`` (accuracy, GNC1, GNC2 / rho-hat, GNC3, NCC accuracy against the epoch).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from gnc_jax._src.process import float64
from gnc_jax._src.errors import InvalidArgument
from gnc_jax._src.geometry import validate_configuration
from gnc_jax._src.status import Status
from gnc_jax.nn import data as datasets
from gnc_jax.nn.train import (
    TrainSettings,
    classifier_weights,
    make_network,
    reference_rho,
    reference_solution,
    train,
)


def softmax_code_classifier(d: int, K: int, assignment=None) -> np.ndarray:
    """W (d, K) of the best softmax code found by the core solver, columns permuted so that class k
    gets code point ``assignment[k]`` (identity by default)."""
    assignment = check_assignment(assignment, K)  # before the solve
    W = np.array(reference_solution(d, K).W)  # a copy: the solution is cached
    return W if assignment is None else W[:, assignment]


def check_assignment(assignment, K: int) -> list[int] | None:
    """``assignment`` as a list if it is a permutation of 0..K-1 (None stays None); else
    :class:`~gnc_jax._src.errors.InvalidArgument` naming it."""
    if assignment is None:
        return None
    assignment = list(assignment)
    if sorted(assignment) != list(range(K)):
        raise InvalidArgument(f"assignment must be a permutation of 0..{K - 1}, got {assignment!r}")
    return assignment


def nearest_assignment(W, means) -> list[int]:
    """A class assignment for a fixed classifier: greedily, the class whose mean is closest (in
    angle) to a free code point takes it, until every class has one.

    With K >> d a fixed code asks the backbone to send class k's features to w_{assignment[k]}; an
    arbitrary assignment makes that an arbitrary map of K points, which a small backbone cannot
    learn (``benchmarks/fixed_head.py``). Matching the classes' mean features of the untrained
    network to nearby code points keeps the map close to the one the backbone already computes
    (the assignment question of §4, Fig. 4, answered by proximity).

    Args:
      W: (d, K) code (columns normalised here).
      means: (d, K) class means of the features, column k for class k (normalised here).

    Returns:
      The permutation as a list: class k gets code point ``assignment[k]``.

    >>> nearest_assignment([[1.0, -1.0], [0.0, 0.0]], [[-2.0, 3.0], [1.0, 0.0]])
    [1, 0]
    """
    W = validate_configuration(W, name="W")
    M = validate_configuration(means, name="means")
    if M.shape != W.shape:
        raise InvalidArgument(f"means must have W's shape {W.shape}, got {M.shape}")
    C = (M.T @ W).astype(np.float32)  # (classes, code points); K = 10^4 is 400 MB
    assignment = np.full(W.shape[1], -1)
    for k in np.argsort(-C.max(axis=1), kind="stable"):  # the most decided classes first
        j = int(np.argmax(C[k]))
        assignment[k] = j
        C[:, j] = -np.inf
    return assignment.tolist()


def square_assignments() -> dict[int, list[int]]:
    """The three distinct assignments of 4 classes to the d = 2, K = 4 softmax code (a square, the
    cross-polytope), up to its symmetries: ``{j: assignment}`` puts class j opposite class 0 (and the
    remaining two classes opposite each other), as ``assignment`` of :func:`softmax_code_classifier`."""
    W = softmax_code_classifier(2, 4)
    anti = int(np.argmin(W[:, 0] @ W))  # the code point opposite point 0
    b, c = (i for i in range(1, 4) if i != anti)
    return {1: [0, anti, b, c], 2: [0, b, anti, c], 3: [0, b, c, anti]}


def _write_json(path: str, obj) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def plot_history(history: list[dict], path: str, title: str = "") -> bool:
    """Plot the per-epoch metrics; False (nothing written) when matplotlib is not installed."""
    try:
        from matplotlib.figure import Figure  # no pyplot: the caller's backend is left alone
    except ImportError:
        return False
    ep = [r["epoch"] for r in history]
    fig = Figure(figsize=(14, 3.2))
    axes = fig.subplots(1, 4)
    axes[0].plot(ep, [r["train_accuracy"] for r in history], label="train")
    axes[0].plot(ep, [r["test_accuracy"] for r in history], label="test")
    axes[0].plot(ep, [r["ncc_train_accuracy"] for r in history], "--", label="NCC train")
    axes[0].set_title("accuracy")
    axes[0].legend()
    axes[1].semilogy(ep, [max(r["gnc1"], 1e-12) for r in history])
    axes[1].set_title("GNC1")
    axes[2].plot(ep, [r["gnc2_ratio"] for r in history])
    axes[2].axhline(1.0, color="k", ls="--")
    axes[2].set_title("GNC2 / best found rho")
    axes[3].semilogy(ep, [max(r["gnc3"], 1e-12) for r in history])
    axes[3].set_title("GNC3")
    for ax in axes:
        ax.set_xlabel("epoch")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return True


@float64
def training_status(history: list[dict]) -> dict:
    """The status of a training run (:class:`gnc_jax.Status` words): ``nonfinite`` when a loss or a
    metric of any epoch is NaN or infinite, else ``max_steps``: training runs a fixed number of epochs
    and has no convergence test, so the epoch budget is what ended it (``residual`` is NaN)."""
    bad = [
        (row["epoch"], k)
        for row in history
        for k, v in row.items()
        if isinstance(v, float) and not np.isfinite(v)
    ]
    if bad:
        epoch, name = bad[0]
        status, note = Status.NONFINITE, f"{name} is not finite at epoch {epoch}"
    else:
        status, note = Status.MAX_STEPS, f"ran its {history[-1]['epoch']} epochs (no convergence test)"
    return {"status": str(status), "residual": float("nan"), "status_note": note}


def verify_network(
    dataset: str = "digits",
    d: int = 3,
    tau: float = 0.1,
    classes: int | list[int] | None = None,
    epochs: int = 200,
    classifier: str = "learned",
    backbone: str = "mlp",
    assignment=None,
    seed: int = 0,
    out: str | None = None,
    settings: TrainSettings | None = None,
    progress=sys.stderr,
) -> dict:
    """Train, measure every epoch, write ``out/metrics.json`` (and a plot); returns the results."""
    # Long because it runs its steps (data, solve, train, report) in order, and they share results.
    data = datasets.load(dataset, classes, seed=seed)
    K = data.num_classes
    settings = (settings or TrainSettings()).replace(epochs=epochs)
    if classifier != "fixed" and assignment is not None:
        raise InvalidArgument("assignment applies to the fixed classifier only")
    assignment = check_assignment(assignment, K)
    W = softmax_code_classifier(d, K, assignment) if classifier == "fixed" else None
    model = make_network(data, d, tau, classifier=classifier, backbone=backbone, W=W, seed=seed)
    rho_hat = reference_rho(d, K)
    result = {
        "dataset": dataset,
        "d": d,
        "K": K,
        "classes": classes,
        "tau": tau,
        "classifier": classifier,
        "backbone": backbone,
        "seed": seed,
        "settings": {k: getattr(settings, k) for k in settings.__dataclass_fields__},
        "rho_hat": rho_hat,
        "epochs": [],
    }
    if out is not None:
        os.makedirs(out, exist_ok=True)

    def on_epoch(row):
        result["epochs"].append(row)
        result["final"] = row
        if progress is not None:
            eta = row["wall_s"] / max(row["epoch"], 1) * (epochs - row["epoch"])
            print(
                f"epoch {row['epoch']:>3}/{epochs}  train {row['train_accuracy']:.3f}  test "
                f"{row['test_accuracy']:.3f}  GNC1 {row['gnc1']:.2e}  GNC2/rho-hat {row['gnc2_ratio']:.3f}  "
                f"GNC3 {row['gnc3']:.2e}  NCC {row['ncc_train_accuracy']:.3f}  ETA {eta:.0f} s",
                file=progress,
                flush=True,
            )
        if out is not None:
            _write_json(os.path.join(out, "metrics.json"), result)

    train(model, data, settings, seed=seed, rho_hat=rho_hat, on_epoch=on_epoch)
    result |= training_status(result["epochs"])
    result["W"] = classifier_weights(model).tolist()  # final classifier (d, K)
    if out is not None:
        title = f"{dataset}, d={d}, K={K}, tau={tau:g}, {classifier}"
        result["plot"] = plot_history(result["epochs"], os.path.join(out, "metrics.png"), title)
        _write_json(os.path.join(out, "metrics.json"), result)
    return result
