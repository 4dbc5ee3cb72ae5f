"""Copy the figures of the executed notebooks into docs/gallery/ for the gallery page.

    python benchmarks/gallery.py          # after executing the notebooks at full size

Every image/png output of notebooks/NN_*.ipynb becomes docs/gallery/NN_k.png (k counts the images of
that notebook from 1, in order), so docs/gallery.md can show them beside the paper's figures.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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


if __name__ == "__main__":
    main()
