"""Pictures of a results store (``gnc-jax plot``): margins against K with Theorem 3.9's bounds,
softmax codes against Tammes codes, and the configurations of d = 2 and d = 3 (matplotlib)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gnc_jax import store, theory


def _by_d(rows, problem):
    out: dict[int, list[dict]] = {}
    for r in rows:
        if r["problem"] == problem:
            out.setdefault(r["d"], []).append(r)
    return {d: sorted(rs, key=lambda r: r["K"]) for d, rs in sorted(out.items())}


def plot_store(rows: list[dict], out_dir, max_pictures: int = 8) -> list[Path]:
    """Write the pictures of the best rows (``store.best``) of ``rows`` (from :func:`store.load`)
    into ``out_dir``; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = store.best(rows)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(out_dir / name, dpi=110)
        plt.close(fig)
        written.append(out_dir / name)

    sc, tm = _by_d(rows, "softmax-code"), _by_d(rows, "tammes")
    if sc:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for d, rs in sc.items():
            K = np.array([r["K"] for r in rs])
            (line,) = ax.plot(K, [r["rho_one_vs_rest"] for r in rs], "o-", ms=3, label=f"d = {d}")
            ok = [k for k in K if theory.bounds_applicable(d, int(k))]
            if ok:
                lo, hi = zip(*(theory.softmax_code_bounds(d, int(k)) for k in ok))
                ax.plot(ok, lo, "--", color=line.get_color(), lw=0.8)
                ax.plot(ok, np.minimum(hi, 2.0), ":", color=line.get_color(), lw=0.8)
        ax.set_xlabel("K")
        ax.set_ylabel("certified ρ one-vs-rest")
        ax.set_title("softmax codes; Theorem 3.9 bounds (-- lower, : upper)")
        ax.legend(fontsize=7, ncol=2)
        save(fig, "rho_vs_K.png")
    if tm:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for d, rs in tm.items():
            ax.plot([r["K"] for r in rs], [r["min_angle_deg"] for r in rs], "o-", ms=3, label=f"d = {d}")
        ax.set_xlabel("K")
        ax.set_ylabel("min angle (deg)")
        ax.set_title("Tammes codes")
        ax.legend(fontsize=7, ncol=2)
        save(fig, "angle_vs_K.png")
    both = {d: rs for d, rs in sc.items() if d in tm}
    if both:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for d, rs in both.items():
            t = {r["K"]: r for r in tm[d]}
            pts = [(r["K"], r["rho_one_vs_rest"] - t[r["K"]]["rho_one_vs_rest"]) for r in rs if r["K"] in t]
            if pts:
                ax.plot(*zip(*pts), "o-", ms=3, label=f"d = {d}")
        ax.axhline(0, color="k", lw=0.6)
        ax.set_xlabel("K")
        ax.set_ylabel("ρ(softmax code) − ρ(Tammes code)")
        ax.set_title("softmax code against Tammes code (0: they coincide)")
        ax.legend(fontsize=7, ncol=2)
        save(fig, "softmax_vs_tammes.png")
    for d in (2, 3):
        for problem, rs in (("softmax-code", sc.get(d, [])), ("tammes", tm.get(d, []))):
            if rs:  # up to max_pictures, spread evenly over the K of the store
                rs = sorted(rs, key=lambda r: r["K"])
                picks = sorted({round(x) for x in np.linspace(0, len(rs) - 1, min(max_pictures, len(rs)))})
                save(_configurations(plt, [rs[i] for i in picks], d), f"{problem}_d{d}.png")
    return written


def _configurations(plt, rows, d):
    n = len(rows)
    fig = plt.figure(figsize=(2.6 * n, 2.8))
    for i, r in enumerate(rows):
        W = store.load_config(r["source"], r)["W"]
        ratt = {int(x) for x in (r["rattlers"] or "").split()}
        colors = ["tab:red" if k in ratt else "tab:blue" for k in range(W.shape[1])]
        if d == 2:
            ax = fig.add_subplot(1, n, i + 1)
            t = np.linspace(0, 2 * np.pi, 200)
            ax.plot(np.cos(t), np.sin(t), color="0.8", lw=0.8)
            ax.scatter(W[0], W[1], c=colors, s=14)
            ax.set_aspect("equal")
        else:
            ax = fig.add_subplot(1, n, i + 1, projection="3d")
            u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 24), np.linspace(0, np.pi, 12))
            ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85", lw=0.4)
            ax.scatter(W[0], W[1], W[2], c=colors, s=10, depthshade=False)
            ax.set_box_aspect((1, 1, 1))
        ax.set_axis_off()
        ax.set_title(f"K = {r['K']}, {len(ratt)} rattlers", fontsize=8)
    fig.suptitle(f"{rows[0]['problem']}, d = {d} (rattlers in red)", fontsize=9)
    return fig
