"""Generalized neural collapse in trained networks (issue 4's experiments), MLP backbones on offline data.

1. digits, d = 3, K = 10: a temperature sweep with the learned normalised classifier (Fig. 2 / B.3);
2. Gaussian mixture, K = 100, d = 10 (CIFAR100's shape in the paper): the same sweep;
3. CMF classifier vs learned (Fig. 5) on both, at tau = 0.1;
4. the assignment problem (Fig. 4): d = 2, digits {3, 9, 4, 6} (pixel-space class means: cos(3, 9) = 0.49,
   cos(4, 6) = 0.30, every cross pair negative), the learned classifier against the three distinct
   assignments of the cross-polytope code, 5 seeds each.

Every run is ``gnc_jax.nn.verify_network``; results go to benchmarks/results/gnc_networks.json after each
run (a rerun skips the runs already there) and the tables to benchmarks/results/gnc_networks.md.
Usage: python benchmarks/gnc_networks.py [--parts digits,gaussian,cmf,assignment] [--epochs 200]
"""

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from gnc_jax.nn.train import TrainSettings
from gnc_jax.nn.verify import square_assignments, verify_network

OUT = Path(__file__).parent / "results"
TAUS = [1.0, 0.5, 0.2, 0.1, 0.05]
PAIR_DIGITS = [3, 9, 4, 6]  # two similar pairs: (3, 9) and (4, 6)
SEEDS = range(5)
# tau = 0.05 once more with the temperature continuation and without weight decay: at small tau the
# cross-entropy gradient becomes exponentially small and weight decay outweighs it
ANNEALED = {"tau_start": 0.2, "weight_decay": 0.0}
CMF_TAU = 0.1  # the smallest temperature at which the learned classifier trains reliably on digits


def assignments() -> dict[str, list[int]]:
    """Classes (0: digit 3, 1: 9, 2: 4, 3: 6) -> points of the square code, three distinct ways."""
    names = {1: "3-9 and 4-6 opposite", 2: "3-4 and 9-6 opposite", 3: "3-6 and 9-4 opposite"}
    return {names[j]: perm for j, perm in square_assignments().items()}


def summarise(res: dict) -> dict:
    first, last = res["epochs"][0], res["final"]
    keys = ("train_accuracy", "test_accuracy", "gnc1", "gnc2", "gnc2_ratio", "gnc3")
    return {k: last[k] for k in keys} | {
        "ncc_train_accuracy": last["ncc_train_accuracy"],
        "ncc_test_accuracy": last["ncc_test_accuracy"],
        "gnc1_start": first["gnc1"],
        "gnc3_start": first["gnc3"],
        "rho_hat": res["rho_hat"],
        "W": res["W"],
        "wall_s": last["wall_s"],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", default="digits,gaussian,cmf,assignment")
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--out", default=str(OUT / "gnc_networks.json"))
    args = ap.parse_args()
    parts = args.parts.split(",")
    path = Path(args.out)
    store = json.loads(path.read_text()) if path.exists() else {}

    def run(name, settings=None, **kw):
        if name in store:
            return store[name]
        t = time.perf_counter()
        res = verify_network(
            epochs=args.epochs, progress=None, settings=TrainSettings(**(settings or {})), **kw
        )
        row = summarise(res) | {"config": kw, "settings": res["settings"]}
        store[name] = row
        path.parent.mkdir(parents=True, exist_ok=True)
        path.with_suffix(".tmp").write_text(json.dumps(store, indent=1))
        os.replace(path.with_suffix(".tmp"), path)
        print(f"{name}: {time.perf_counter() - t:.0f} s  " + json.dumps({k: row[k] for k in list(row)[:6]}))
        return row

    for dataset, d, K in (("digits", 3, None), ("gaussian", 10, 100)):
        if dataset in parts:
            for tau in TAUS:
                run(f"{dataset} learned tau={tau:g}", dataset=dataset, d=d, tau=tau, classes=K)
            run(
                f"{dataset} learned tau={TAUS[-1]:g} from {ANNEALED['tau_start']:g}, no weight decay",
                settings=ANNEALED,
                dataset=dataset,
                d=d,
                tau=TAUS[-1],
                classes=K,
            )
        if "cmf" in parts:
            for clf in ("learned", "cmf"):
                run(
                    f"{dataset} {clf} tau={CMF_TAU:g}",
                    dataset=dataset,
                    d=d,
                    tau=CMF_TAU,
                    classes=K,
                    classifier=clf,
                )
    if "assignment" in parts:
        for seed in SEEDS:
            run(
                f"assignment learned seed={seed}",
                dataset="digits",
                classes=PAIR_DIGITS,
                d=2,
                tau=0.1,
                seed=seed,
            )
            for label, perm in assignments().items():
                run(
                    f"assignment {label} seed={seed}",
                    dataset="digits",
                    classes=PAIR_DIGITS,
                    d=2,
                    tau=0.1,
                    seed=seed,
                    classifier="fixed",
                    assignment=perm,
                )

    write_tables(store, path.with_suffix(".md"))


def _sweep_table(store, prefix, title):
    rows = [(k, v) for k, v in store.items() if k.startswith(prefix)]
    if not rows:
        return []
    out = [
        f"{title}\n",
        "| run | train acc | test acc | GNC1 start -> end | GNC2 / rho-hat | rho-hat (best found) "
        "| GNC3 start -> end | NCC train | NCC test |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for k, r in rows:
        out.append(
            f"| {k[len(prefix) :].strip()} | {r['train_accuracy']:.3f} | {r['test_accuracy']:.3f} | "
            f"{r['gnc1_start']:.2e} -> {r['gnc1']:.2e} | {r['gnc2_ratio']:.3f} | {r['rho_hat']:.7f} | "
            f"{r['gnc3_start']:.2e} -> {r['gnc3']:.2e} | {r['ncc_train_accuracy']:.3f} | "
            f"{r['ncc_test_accuracy']:.3f} |"
        )
    return out + [""]


def _angle(W, i, j):
    W = np.asarray(W)
    return float(np.degrees(np.arccos(np.clip(W[:, i] @ W[:, j], -1, 1))))


def write_tables(store, path):
    lines = ["# Generalized neural collapse in trained networks (benchmarks/gnc_networks.py)\n"]
    lines += _sweep_table(store, "digits learned", "## digits, d = 3, K = 10, learned classifier")
    lines += _sweep_table(
        store, "gaussian learned", "## Gaussian mixture, K = 100, d = 10, learned classifier"
    )
    cmf = {k: v for k, v in store.items() if " cmf " in k or (k.endswith(f"learned tau={CMF_TAU:g}"))}
    lines += _sweep_table(cmf, "", "## CMF vs learned classifier")
    runs = {}
    for k, r in store.items():
        if k.startswith("assignment"):
            runs.setdefault(k.split(" seed=")[0].removeprefix("assignment "), []).append(r)
    if runs:
        lines += [
            "## Assignment (d = 2, digits 3, 9, 4, 6; tau = 0.1)\n",
            "| classifier | test acc, mean over seeds | per seed | angle(3, 9) | angle(4, 6) |",
            "| --- | --- | --- | --- | --- |",
        ]
        for label, rs in runs.items():
            acc = [r["test_accuracy"] for r in rs]
            a39 = np.mean([_angle(r["W"], 0, 1) for r in rs])
            a46 = np.mean([_angle(r["W"], 2, 3) for r in rs])
            lines.append(
                f"| {label} | {np.mean(acc):.4f} +- {np.std(acc):.4f} | "
                f"{', '.join(f'{a:.3f}' for a in acc)} | {a39:.0f} deg | {a46:.0f} deg |"
            )
    path.write_text("\n".join(lines) + "\n")
    print(path.read_text())


if __name__ == "__main__":
    main()
