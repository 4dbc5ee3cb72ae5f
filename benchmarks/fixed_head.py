"""A softmax code as a fixed classifier head at K = 10,000 classes, on generated data (issue 48, item 4).

The code is read from a plain ``.npy`` file (``--code``); when the file does not exist it is solved
first with default settings (``gnc_jax.solve_softmax_code(d, K, seed=0)``) and saved there with
``gnc_jax.store.save_code``, so the network below always starts from the file. Three heads on the
same MLP backbone and spherical feature head (``gnc_jax.nn.make_network``), trained the same way
(``gnc_jax.nn.train``, one seed) on a Gaussian mixture of K classes (``gnc_jax.nn.gaussian_mixture``):

* ``softmax code``: ``FixedClassifier`` with the code as stored (class k gets column k), not trained
  (no d x K parameters);
* ``softmax code, nearest``: the same code, class k given column ``assignment[k]`` by
  ``gnc_jax.nn.nearest_assignment`` from the class means of the untrained network's features;
* ``random code, nearest``: K unit Gaussian columns (seed 1), assigned the same way: the baseline
  every fixed-classifier paper compares with;
* ``learned``: ``NormalizedClassifier``, the d x K weights trained with the network.

The fixed heads' backbone is wider (``fixed_width``), so that every network trains the same number
of parameters.

Reported per head after the last epoch: test and train accuracy, NCC test accuracy, GNC1, GNC3, the
classifier's certified margin (GNC2, eq. 3) and max cos, the trained parameters, the training time
(measurements excluded) and the process's peak resident memory so far. Written to
benchmarks/results/fixed_head.json after each head.

Usage: python benchmarks/fixed_head.py [--code FILE] [--d 64] [--K 10000] [--epochs 30] [--heads "learned"]
"""

import argparse
import functools
import json
import os
import resource
import time
from pathlib import Path

import jax
import numpy as np
from flax import nnx

import gnc_jax
from gnc_jax import metrics, nn
from gnc_jax.store import load_code, save_code

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results"
HEADS = ("softmax code", "softmax code, nearest", "random code, nearest", "learned")
KEYS = ("test_accuracy", "train_accuracy", "ncc_test_accuracy", "gnc1", "gnc2", "gnc3", "test_loss")


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def the_code(path: Path, d: int, K: int) -> np.ndarray:
    if not path.exists():
        t = time.perf_counter()
        save_code(path, gnc_jax.solve_softmax_code(d, K, seed=0))
        print(f"solved and saved {path} in {time.perf_counter() - t:.1f} s", flush=True)
    W = load_code(path)
    if W.shape != (d, K):
        raise SystemExit(f"--code: {path} holds a {W.shape} code, not (d, K) = {(d, K)}")
    return W


def fixed_width(width: int, dim: int, d: int, K: int) -> int:
    """The widest backbone (two layers, as ``make_network``'s default) whose fixed-head network trains
    no more parameters than the learned head's at ``width``: the d K weights a fixed code does not
    train go to the backbone, so every head gets the same budget."""

    def trained(w, head):  # dim -> w -> w -> d (weights and biases), then the head's d x K
        return dim * w + w + w * w + w + w * d + d + head

    w = width
    while trained(w + 1, 0) <= trained(width, d * K):
        w += 1
    return w


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--K", type=int, default=10000)
    ap.add_argument(
        "--code", type=Path, help="the .npy (default: results/codes/softmax_code_d{d}_K{K}_seed0.npy)"
    )
    ap.add_argument("--dim", type=int, default=64, help="input dimension of the mixture")
    ap.add_argument("--per-class", type=int, default=16, help="points per class (a quarter held out)")
    ap.add_argument("--separation", type=float, default=10.0, help="norm of the class means")
    ap.add_argument("--tau", type=float, default=0.05)
    ap.add_argument("--width", type=int, default=512, help="backbone width of the learned head")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--lr", type=float, default=3e-3, help="Adam's initial step (cosine decay to 0)")
    ap.add_argument("--heads", default=";".join(HEADS), help="; between names")
    ap.add_argument("--out", type=Path, default=OUT / "fixed_head.json")
    args = ap.parse_args()
    d, K = args.d, args.K
    code_path = args.code or OUT / "codes" / f"softmax_code_d{d}_K{K}_seed0.npy"
    heads = args.heads.split(";")
    if not set(heads) <= set(HEADS):
        ap.error(f"--heads: ';'-separated, of {HEADS}, got {args.heads!r}")
    code = the_code(code_path, d, K)
    random_code = np.random.default_rng(1).normal(size=(d, K))
    data = nn.gaussian_mixture(K, dim=args.dim, per_class=args.per_class, separation=args.separation, seed=0)
    width = fixed_width(args.width, args.dim, d, K)
    network = functools.partial(nn.make_network, data, d, args.tau, seed=0)
    untrained = network(classifier="fixed", W=code, width=width)  # every fixed head starts from it
    means = metrics.class_means(np.asarray(untrained.features(data.x_train)).T, data.y_train, K)
    codes = {
        "softmax code": code,
        "softmax code, nearest": code[:, nn.nearest_assignment(code, means)],
        "random code, nearest": random_code[:, nn.nearest_assignment(random_code, means)],
    }
    settings = nn.TrainSettings(
        epochs=args.epochs, batch_size=256, learning_rate=args.lr, measure_every=args.epochs
    )
    result = {
        "d": d,
        "K": K,
        "code_file": os.path.relpath(code_path, ROOT),
        "data": {"dim": args.dim, "per_class": args.per_class, "separation": args.separation, "seed": 0},
        "n_train": len(data.x_train),
        "n_test": len(data.x_test),
        "tau": args.tau,
        "width": {"learned": args.width, "fixed": width},
        "settings": {k: getattr(settings, k) for k in ("epochs", "batch_size", "learning_rate", "optimizer")},
        "device": str(jax.devices()[0]),
        "command": f"python benchmarks/fixed_head.py --d {d} --K {K} --epochs {args.epochs} --lr {args.lr} "
        + f"--dim {args.dim} --separation {args.separation} --width {args.width}",
        "heads": {},
    }
    for head in heads:
        W = codes.get(head)
        if W is None:
            model = network(classifier="learned", width=args.width)
        else:
            model = network(classifier="fixed", W=W, width=width)
        trained = sum(x.size for x in jax.tree.leaves(nnx.state(model, nnx.Param)))
        history = nn.train(model, data, settings, seed=0)
        first, last = history[0], history[-1]
        max_cos = gnc_jax.max_cos(nn.classifier_weights(model))
        row = {k: last[k] for k in KEYS} | {
            "test_accuracy_before": first["test_accuracy"],
            "max_cos": max_cos,
            "trained_parameters": int(trained),
            "train_s": last["wall_s"] - last["measure_s"],
            "peak_rss_gib": peak_gib(),
        }
        print(json.dumps({head: row}), flush=True)
        result["heads"][head] = row
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
