"""`make demo`: softmax codes and Tammes codes for a small grid beside the closed forms of Theorem 3.3
and the bounds of Theorem 3.9; writes results.csv and codes.png."""

from __future__ import annotations

import csv
import os
import sys
import time

from gnc_jax._src import batch, theory
from gnc_jax._src.driver import SolverSettings

DEMO_DS = (2, 3, 4)
DEMO_KS = tuple(range(3, 13))
DEMO_SETTINGS = SolverSettings(restarts=32, hop_rounds=2)


def run(out_dir: str, seed: int = 0, ds=DEMO_DS, Ks=DEMO_KS, solver=DEMO_SETTINGS) -> list[dict]:
    t0 = time.perf_counter()
    print(f"gnc-jax demo: d in {list(ds)}, K in {Ks[0]}..{Ks[-1]}, both problems", file=sys.stderr)
    tm = batch.solve("tammes", list(ds), list(Ks), seed=seed, solver=solver)
    sc = batch.solve("softmax-code", list(ds), list(Ks), seed=seed, solver=solver)  # starts from tm
    rows = []
    for a, b in zip(sc, tm):
        cf = theory.softmax_code_closed_form(a.d, a.K)
        lo, hi = theory.softmax_code_bounds(a.d, a.K) if theory.bounds_applicable(a.d, a.K) else (None, None)
        rows.append(
            {
                "d": a.d,
                "K": a.K,
                "rho_softmax_code": a.rho_one_vs_rest,
                "rho_closed_form": None if cf is None else cf[0],
                "rho_of_tammes_code": b.rho_one_vs_rest,
                "tammes_min_angle_deg": b.min_angle_deg,
                "tammes_max_cos": b.max_cos,
                "tammes_closed_form_max_cos": theory.tammes_closed_form(a.d, a.K),
                "bound_lower": lo,
                "bound_upper": hi,
                "softmax_code_rattlers": a.n_rattlers,
                "certificate_gap": max(a.certificate_gap, b.certificate_gap),
            }
        )
    fmt = lambda v: "-" if v is None else f"{v:.9f}"
    print(
        f"{'d':>2} {'K':>3} {'rho_SC':>12} {'closed form':>12} {'rho(Tammes)':>12} {'angle':>13} "
        f"{'bound lo':>12} {'bound hi':>12}"
    )
    for r in rows:
        print(
            f"{r['d']:>2} {r['K']:>3} {fmt(r['rho_softmax_code']):>12} {fmt(r['rho_closed_form']):>12} "
            f"{fmt(r['rho_of_tammes_code']):>12} {fmt(r['tammes_min_angle_deg']):>13} "
            f"{fmt(r['bound_lower']):>12} {fmt(r['bound_upper']):>12}"
        )
    path = os.path.join(out_dir, "results.csv")
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    os.replace(path + ".tmp", path)
    _plot(rows, os.path.join(out_dir, "codes.png"), {s.d: s.W for s in sc if s.K == 7 and s.d in (2, 3)})
    print(f"wrote {path} and codes.png in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return rows


def _plot(rows, path, examples):
    from matplotlib.figure import Figure  # no pyplot: the caller's backend is left alone

    fig = Figure(figsize=(15, 4.5))
    axes = fig.subplots(1, 3)
    ax = axes[0]
    for d in sorted({r["d"] for r in rows}):
        rs = [r for r in rows if r["d"] == d]
        (line,) = ax.plot(
            [r["K"] for r in rs], [r["rho_softmax_code"] for r in rs], "o-", label=f"softmax code d={d}"
        )
        ax.plot([r["K"] for r in rs], [r["rho_of_tammes_code"] for r in rs], "x", color=line.get_color())
        cf = [(r["K"], r["rho_closed_form"]) for r in rs if r["rho_closed_form"] is not None]
        if cf:
            ax.plot(*zip(*cf), "s", mfc="none", ms=10, color=line.get_color())
        bd = [(r["K"], r["bound_lower"], r["bound_upper"]) for r in rs if r["bound_lower"] is not None]
        if bd:
            k, lo, hi = zip(*bd)
            ax.fill_between(k, lo, hi, color=line.get_color(), alpha=0.08)
    ax.set(
        xlabel="K", ylabel="rho_one-vs-rest", title="softmax codes (o), Tammes codes (x), Thm 3.3 (squares)"
    )
    ax.legend(fontsize=8)
    ax = axes[1]
    if 2 in examples:
        import numpy as np

        W = examples[2][:, np.argsort(np.arctan2(examples[2][1], examples[2][0]))]
        ax.plot(np.append(W[0], W[0, 0]), np.append(W[1], W[1, 0]), "o-")
        t = np.linspace(0, 2 * np.pi, 200)
        ax.plot(np.cos(t), np.sin(t), lw=0.5, color="gray")
        ax.set_aspect("equal")
        ax.set_title("softmax code d=2, K=7")
    ax = axes[2]
    if 3 in examples:
        axes[2].remove()
        ax = fig.add_subplot(1, 3, 3, projection="3d")
        W = examples[3]
        ax.scatter(*W, s=60)
        for k in range(W.shape[1]):
            ax.plot([0, W[0, k]], [0, W[1, k]], [0, W[2, k]], lw=0.8)
        ax.set_title("softmax code d=3, K=7")
    fig.tight_layout()
    fig.savefig(path + ".tmp.png", dpi=100)
    os.replace(path + ".tmp.png", path)
