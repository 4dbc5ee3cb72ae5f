"""The table of codes shipped with gnc_jax (``gnc_jax/data/codes.csv`` and ``codes.npz``), built from
results stores: the best row per (problem, d, K) (:func:`gnc_jax.store.best`) and its configuration.

Each row keeps its store's certified numbers, status and provenance (seed, settings, version,
device, time), except that a code at a proven optimum is marked ``optimal`` (the rule of a solve,
:func:`gnc_jax._src.batch.proven_status`, with the closed forms known now); its ``config`` column
names its array in ``codes.npz``. With ``--merge`` the current shipped table joins the stores,
so that a new store only adds the codes that beat it.
:func:`gnc_jax.known_code` reads the table and re-certifies a code on load.

Usage: python benchmarks/build_table.py STORE.csv [STORE.csv ...] [--merge] [--problems tammes,softmax-code]
"""

import argparse
import io
from pathlib import Path

import numpy as np

from gnc_jax import store
from gnc_jax._src.batch import proven_status
from gnc_jax._src.known import CONFIGS, TABLE, config_name, table_rows
from gnc_jax._src.objectives import get_problem
from gnc_jax._src.status import Status


def best_codes(stores, problems, merge: bool) -> list[tuple[dict, np.ndarray]]:
    """(row, W) for the best row per (problem, d, K) of the stores' rows of ``problems``, the whole
    shipped table joining them (first, so that it wins ties) when ``merge``."""
    rows = [r for r in store.load(stores) if r["problem"] in problems]
    with np.load(CONFIGS) as shipped:
        if merge:
            rows = [r | {"source": "shipped"} for r in table_rows().values()] + rows
        return [
            (r, shipped[r["config"]] if r["source"] == "shipped" else store.load_config(r["source"], r)["W"])
            for r in store.best(rows)
        ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("stores", nargs="+", type=Path)
    ap.add_argument("--merge", action="store_true", help="the shipped table joins the stores")
    ap.add_argument("--problems", default="tammes,softmax-code")
    args = ap.parse_args()
    problems = args.problems.split(",")
    out_rows, out_arrays = [], {}
    for r, W in best_codes(args.stores, problems, args.merge):
        name = config_name(r)
        if W.shape != (r["d"], r["K"]):
            raise SystemExit(f"{r['source']}: {name} has a configuration of shape {W.shape}")
        out_arrays[name] = np.asarray(W, np.float64)
        status, residual = proven_status(
            get_problem(r["problem"]),
            r["d"],
            r["K"],
            Status(r["status"]),
            r["residual"],
            r["max_cos"],
            r["rho_lower"],
        )
        row = {k: v for k, v in r.items() if k != "source"}  # an older store's row: its new columns empty
        row |= {"config": name, "status": status.value, "residual": residual}
        out_rows.append(row | {"store_format": store.STORE_FORMAT})
    buf = io.BytesIO()
    np.savez_compressed(buf, **out_arrays)
    CONFIGS.write_bytes(buf.getvalue())
    store.save(TABLE, out_rows)
    sizes = f"{TABLE.stat().st_size} + {CONFIGS.stat().st_size} bytes"
    print(f"{len(out_rows)} codes: {TABLE}, {CONFIGS} ({sizes})")


if __name__ == "__main__":
    main()
