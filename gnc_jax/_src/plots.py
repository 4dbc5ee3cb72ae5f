"""Pictures of a results store (``gnc-jax plot``): margins against K with Theorem 3.9's bounds,
softmax codes against Tammes codes, the configurations of d = 2, and every picked d = 3 code on a
shaded sphere with its contact graph and rattlers (:func:`code_figure`, one file per code), and with
``html`` an interactive 3-D view of each (:func:`code_figure_3d`, plotly)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gnc_jax._src import store, theory
from gnc_jax._src.errors import InvalidArgument


def _by_d(rows, problem):
    out: dict[int, list[dict]] = {}
    for r in rows:
        if r["problem"] == problem:
            out.setdefault(r["d"], []).append(r)
    return {d: sorted(rs, key=lambda r: r["K"]) for d, rs in sorted(out.items())}


def plot_store(rows: list[dict], out_dir, max_pictures: int = 8, html: bool = False) -> list[Path]:
    """Write the pictures of the best rows (``store.best``) of store rows into a folder.

    Args:
      rows: store rows (from :func:`gnc_jax.store.load`).
      out_dir: the folder (created if needed).
      max_pictures: at most this many code pictures (the d = 3 codes) besides the summary plots.
      html: also an interactive view (:func:`code_figure_3d`) beside every d = 3 code's PNG.

    Returns:
      The files written.
    """
    # Long because it draws one figure per kind of picture from the same rows.
    import matplotlib.pyplot as plt  # closes code_figure's figures; the rest is drawn without pyplot
    from matplotlib.figure import Figure

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
        fig = Figure(figsize=(7, 4.5))
        ax = fig.subplots()
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
        fig = Figure(figsize=(7, 4.5))
        ax = fig.subplots()
        for d, rs in tm.items():
            ax.plot([r["K"] for r in rs], [r["min_angle_deg"] for r in rs], "o-", ms=3, label=f"d = {d}")
        ax.set_xlabel("K")
        ax.set_ylabel("min angle (deg)")
        ax.set_title("Tammes codes")
        ax.legend(fontsize=7, ncol=2)
        save(fig, "angle_vs_K.png")
    both = {d: rs for d, rs in sc.items() if d in tm}
    if both:
        fig = Figure(figsize=(7, 4.5))
        ax = fig.subplots()
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
                rs = [rs[i] for i in picks]
                if d == 2:
                    save(_circle_strip(Figure, rs), f"{problem}_d2.png")
                    continue
                for r in rs:  # d = 3: one readable picture per code
                    W, ratt, value = stored_code(r)
                    title = f"{problem}, d = 3, K = {r['K']}: {value} ({r['status']})"
                    save(code_figure(W, title, ratt), f"{problem}_d3_K{r['K']}.png")
                    if html:
                        path = out_dir / f"{problem}_d3_K{r['K']}.html"
                        code_figure_3d(W, title, ratt).write_html(path, include_plotlyjs="cdn")
                        written.append(path)
    return written


def stored_code(row: dict) -> tuple[np.ndarray, list[int], str]:
    """What a picture of a store row shows.

    Args:
      row: a store row with ``source`` (from :func:`gnc_jax.store.load`).

    Returns:
      (W, its rattlers, its certified value as text: the min angle for Tammes rows, rho one-vs-rest
      otherwise).
    """
    W = store.load_config(row["source"], row)["W"]
    rattlers = [int(x) for x in (row["rattlers"] or "").split()]
    if row["problem"] == "tammes":
        return W, rattlers, f"{row['min_angle_deg']:.9f} deg"
    return W, rattlers, f"rho {row['rho_one_vs_rest']:.9f}"


def _circle_strip(Figure, rows):
    """The d = 2 codes of ``rows`` side by side on the unit circle (rattlers in red)."""
    n = len(rows)
    fig = Figure(figsize=(2.6 * n, 2.8))
    for i, r in enumerate(rows):
        W, ratt, _ = stored_code(r)
        colors = ["tab:red" if k in ratt else "tab:blue" for k in range(W.shape[1])]
        ax = fig.add_subplot(1, n, i + 1)
        t = np.linspace(0, 2 * np.pi, 200)
        ax.plot(np.cos(t), np.sin(t), color="0.8", lw=0.8)
        ax.scatter(W[0], W[1], c=colors, s=14)
        ax.set_aspect("equal")
        ax.set_axis_off()
        ax.set_title(f"K = {r['K']}, {len(ratt)} rattlers", fontsize=8)
    fig.suptitle(f"{rows[0]['problem']}, d = 2 (rattlers in red)", fontsize=9)
    return fig


def contact_graph(W, tol: float = 1e-6) -> np.ndarray:
    """The contact graph of W: the pairs whose chord is within ``tol`` of the minimum pairwise chord
    (the pairs that hold a Tammes code, eq. 11, rigid).

    Args:
      W: (d, K) configuration.
      tol: tolerance in chord units.

    Returns:
      (E, 2) integer array of edges (i, j), i < j.

    >>> import numpy as np
    >>> contact_graph(np.array([[1.0, 0.0, -1.0, 0.0], [0.0, 1.0, 0.0, -1.0]])).tolist()  # the square
    [[0, 1], [0, 3], [1, 2], [2, 3]]
    """
    from gnc_jax._src.geometry import cosines

    chord = np.sqrt(np.maximum(2.0 - 2.0 * cosines(W), 0.0))
    i, j = np.triu_indices(chord.shape[0], 1)
    keep = chord[i, j] <= chord[i, j].min() + tol
    return np.stack([i[keep], j[keep]], axis=1)


def _d3_code(W, rattlers, tol):
    """The validated d = 3 configuration, its contact graph and its set of rattlers."""
    from gnc_jax._src.geometry import validate_configuration

    A = validate_configuration(W)
    if A.shape[0] != 3:
        raise InvalidArgument(f"W must be a d = 3 configuration, got d = {A.shape[0]}")
    return A, contact_graph(A, tol), {int(k) for k in rattlers}


def _arc(a, b, n: int = 40) -> np.ndarray:
    """n points (rows) of the great-circle arc from unit vector a to unit vector b."""
    t = np.linspace(0, 1, n)[:, None]
    theta = np.arccos(np.clip(a @ b, -1, 1))
    return (np.sin((1 - t) * theta) * a + np.sin(t * theta) * b) / np.sin(theta)


def _caption(edges, rattlers, tol) -> str:
    return f"{len(edges)} contacts (min angle to {tol:g}), {len(rattlers)} rattlers in red"


def code_figure_3d(W, title: str | None = None, rattlers=(), tol: float = 1e-6):
    """An interactive view of a d = 3 code (plotly; turn it with the mouse): a shaded sphere, the
    points (rattlers in red) and the contact graph (:func:`contact_graph`) as great-circle arcs.

    Args:
      W, title, rattlers, tol: as for :func:`code_figure`.

    Returns:
      A ``plotly.graph_objects.Figure`` (``.show()``, ``.write_html(path)``).
    """
    # Long because it builds one plotly figure trace by trace.
    try:
        import plotly.graph_objects as go
    except ImportError:
        raise ImportError("the interactive view needs plotly: pip install 'gnc_jax[demo]'") from None

    A, edges, ratt = _d3_code(W, rattlers, tol)
    u, v = np.meshgrid(
        np.linspace(0, 2 * np.pi, 49, dtype=np.float32), np.linspace(0, np.pi, 25, dtype=np.float32)
    )
    sphere = go.Surface(
        x=np.cos(u) * np.sin(v),
        y=np.sin(u) * np.sin(v),
        z=np.cos(v),
        colorscale=[[0, "#b9c7d6"], [1, "#f4f7fa"]],
        showscale=False,
        hoverinfo="skip",
        lighting=dict(ambient=0.75, diffuse=0.4, specular=0.1),
    )
    arcs = [np.vstack([1.004 * _arc(A[:, i], A[:, j], 24), np.full((1, 3), np.nan)]) for i, j in edges]
    arcs = np.vstack(arcs) if arcs else np.empty((0, 3))
    contacts = go.Scatter3d(
        x=arcs[:, 0],
        y=arcs[:, 1],
        z=arcs[:, 2],
        mode="lines",
        line=dict(color="#1f3b5c", width=4),
        hoverinfo="skip",
        name="contacts",
    )
    points = go.Scatter3d(
        x=1.01 * A[0],
        y=1.01 * A[1],
        z=1.01 * A[2],
        mode="markers",
        marker=dict(
            size=5,
            color=["#d62728" if k in ratt else "#1f77b4" for k in range(A.shape[1])],
            line=dict(color="black", width=1),
        ),
        text=[f"w_{k}" + (" (rattler)" if k in ratt else "") for k in range(A.shape[1])],
        hoverinfo="text",
        name="points",
    )
    caption = _caption(edges, ratt, tol)
    fig = go.Figure([sphere, contacts, points])
    fig.update_layout(
        title=dict(text=f"{title}<br><sub>{caption}</sub>" if title else caption, font=dict(size=14)),
        scene=dict(
            xaxis_visible=False,
            yaxis_visible=False,
            zaxis_visible=False,
            aspectmode="cube",
            camera=dict(eye=dict(x=1.15, y=0.95, z=0.75)),
        ),
        showlegend=False,
        width=620,
        height=620,
        margin=dict(l=0, r=0, t=60, b=0),
    )
    return fig


def code_figure(W, title: str | None = None, rattlers=(), tol: float = 1e-6):
    """A d = 3 code drawn on a shaded sphere, from both sides (orthographic views along +z and -z):
    points (rattlers in red, hollow on the far side), and the contact graph (:func:`contact_graph`)
    as great-circle arcs.

    Args:
      W: (3, K) configuration.
      title: the figure's title.
      rattlers: indices of the points drawn in red.
      tol: the contact graph's tolerance.

    Returns:
      A matplotlib figure (9 x 4.6 in).
    """
    import matplotlib.pyplot as plt
    from matplotlib.colors import LinearSegmentedColormap

    A, edges, ratt = _d3_code(W, rattlers, tol)
    x = np.linspace(-1, 1, 400)
    X, Y = np.meshgrid(x, x)
    Z = np.sqrt(np.clip(1 - X**2 - Y**2, 0, None))
    light = np.array([-0.45, 0.55, 0.70]) / np.linalg.norm([-0.45, 0.55, 0.70])
    shade = np.clip(light[0] * X + light[1] * Y + light[2] * Z, 0, 1)
    shade = np.ma.masked_where(X**2 + Y**2 > 1, 0.35 + 0.65 * shade)
    cmap = LinearSegmentedColormap.from_list("sphere", ["#b9c7d6", "#f4f7fa"])
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.6))
    for ax, sign, side in zip(axes, (1, -1), ("seen from +z", "seen from -z")):
        P = A * np.array([[sign], [1], [sign]])  # the back view: rotate by pi about the y axis
        ax.imshow(shade, extent=(-1, 1, -1, 1), origin="lower", cmap=cmap, vmin=0, vmax=1)
        ax.add_patch(plt.Circle((0, 0), 1, fill=False, color="0.45", lw=0.8))
        for i, j in edges:
            arc = _arc(P[:, i], P[:, j])
            front = arc[:, 2] >= 0
            for mask, style in ((front, dict(color="#1f3b5c", lw=1.4)), (~front, dict(color="0.6", lw=0.7))):
                seg = np.where(mask[:, None], arc, np.nan)
                ax.plot(seg[:, 0], seg[:, 1], zorder=2, **style)
        for k in range(A.shape[1]):
            color = "tab:red" if k in ratt else "#1f77b4"
            if P[2, k] >= 0:
                ax.scatter(P[0, k], P[1, k], s=46, color=color, edgecolor="k", lw=0.6, zorder=4)
            else:
                ax.scatter(
                    P[0, k], P[1, k], s=30, facecolor="none", edgecolor=color, lw=0.9, alpha=0.6, zorder=3
                )
        ax.set_xlim(-1.05, 1.05)
        ax.set_ylim(-1.05, 1.05)
        ax.set_aspect("equal")
        ax.set_axis_off()
        ax.set_title(side, fontsize=9)
    caption = _caption(edges, ratt, tol)
    fig.suptitle(f"{title}\n{caption}" if title else caption, fontsize=10)
    fig.tight_layout()
    return fig
