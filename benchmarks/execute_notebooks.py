"""Execute notebooks at full size (GNC_QUICK unset) and save them with their outputs, in place.

    python benchmarks/execute_notebooks.py notebooks/01_softmax_codes.ipynb [...]

Prints each notebook's wall time; afterwards `python benchmarks/gallery.py` refreshes the gallery.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def main(paths: list[str]) -> None:
    os.environ.pop("GNC_QUICK", None)
    for p in map(Path, paths):
        nb = nbformat.read(p, as_version=4)
        t0 = time.perf_counter()
        NotebookClient(
            nb, timeout=None, kernel_name="python3", resources={"metadata": {"path": str(p.parent)}}
        ).execute()
        nbformat.write(nb, p)
        print(f"{p}: {time.perf_counter() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
