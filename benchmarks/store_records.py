"""Store saved Tammes configurations (benchmarks/results/records/*.npy) as certified rows of a store.

A file there is a code one run found above the best code held at the time (its name: problem, d, K,
seed and the setting that differed from the default). Each joins a seeded solve of its pair, as in
``cross_seed_stores.py`` (initial configuration, search off, 8 restarts; the polish can only improve
it), and the certified row goes to OUT, its settings naming the file. Files already named by a row of
OUT are skipped, so a rerun resumes. Then ``cross_seed_stores.py`` (softmax codes from the new Tammes
codes) and ``build_table.py --merge`` bring them into the table (docs/table.md).

    python benchmarks/store_records.py --out benchmarks/results/table46/records.csv [FILE.npy ...]
"""

import argparse
import json
from pathlib import Path

import numpy as np
from cross_seed_stores import solve_seeded

from gnc_jax import store

RECORDS = Path(__file__).parent / "results" / "records"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*", type=Path, help="configurations (default: records/tammes_*.npy)")
    ap.add_argument("--out", required=True, help="store of the new rows")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    files = args.files or sorted(RECORDS.glob("tammes_*.npy"))
    for path in files:
        if not path.is_file():
            ap.error(f"argument files: no file {path}")
    codes = {path: np.load(path) for path in files}
    for path, W in codes.items():
        if W.ndim != 2 or min(W.shape) < 2:
            ap.error(f"argument files: {path} holds an array of shape {W.shape}, not a (d, K) code")
    with store.ResultsStore(args.out) as st:
        done = {json.loads(r["settings"]).get("seeded_with") for r in st.rows}
        for path, W in codes.items():
            name = f"{path.parent.name}/{path.name}"
            if name in done:
                continue
            d, K = W.shape
            sol = solve_seeded(st, "tammes", d, K, W, name, args.seed)
            print(
                f"tammes d={d} K={K:<3} {name}: min angle {sol.min_angle_deg:.9f} ({sol.status})", flush=True
            )


if __name__ == "__main__":
    main()
