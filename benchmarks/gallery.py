"""Copy the figures of the executed notebooks into docs/gallery/ for the gallery page, and write
interactive views of some d = 3 codes of the committed table.

    python benchmarks/gallery.py          # after executing the notebooks at full size

Every image/png output of notebooks/NN_*.ipynb becomes docs/gallery/NN_k.png (k counts the images of
that notebook from 1, in order), so docs/gallery.md can show them beside the paper's figures. The
best rows of the shipped table (gnc_jax/data/codes.csv) at d = 3 and the K of ``VIEWS`` become
docs/gallery/<problem>_d3_K<K>.html (plotly, :func:`gnc_jax.plots.code_figure_3d`).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STORES = [ROOT / "gnc_jax" / "data" / "codes.csv"]  # the table shipped with gnc_jax
VIEWS = {"tammes": (12, 24, 48), "softmax-code": (30,)}


def main() -> None:
    out = ROOT / "docs" / "gallery"
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.png"):
        old.unlink()
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        images = [
            o["data"]["image/png"]
            for cell in json.loads(nb.read_text())["cells"]
            if cell["cell_type"] == "code"
            for o in cell.get("outputs", [])
            if "image/png" in o.get("data", {})
        ]
        for k, data in enumerate(images, 1):
            path = out / f"{nb.name[:2]}_{k}.png"
            path.write_bytes(base64.b64decode(data if isinstance(data, str) else "".join(data)))
            print(path.relative_to(ROOT))
    write_views(out)


def write_views(out: Path) -> None:
    """Interactive views of the d = 3 codes of ``VIEWS`` (best rows of the committed stores)."""
    from gnc_jax import store
    from gnc_jax.plots import code_figure_3d, stored_code

    for old in out.glob("*.html"):
        old.unlink()
    for r in store.best(store.load(STORES)):
        if r["d"] == 3 and r["K"] in VIEWS.get(r["problem"], ()):
            W, ratt, value = stored_code(r)
            path = out / f"{r['problem']}_d3_K{r['K']}.html"
            title = f"{r['problem']}, d = 3, K = {r['K']}: {value}"
            code_figure_3d(W, title, ratt).write_html(path, include_plotlyjs="cdn")
            print(path.relative_to(ROOT))


if __name__ == "__main__":
    main()
