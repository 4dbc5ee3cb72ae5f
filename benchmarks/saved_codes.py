"""Certify every saved code in benchmarks/results/codes again, from the file alone (issue 48).

Each ``.npy`` there is a (d, K) configuration written by ``benchmarks/scale.py --codes`` (float64, the
file its ``scale.json`` row was certified from) or by a one-off run (a ``_float32`` file is that
run's float64 code rounded to float32: a code in its own right, certified here as stored). For each
file: its SHA-256, max cos (exact), the certified one-vs-rest margin bracket [rho_lower, rho_upper]
(``scale.certified``, as for the rows of scale.json: ``gnc_jax.separation``, lower bounds for every
class from W itself, exact QPs at the margin) and the LP bound on max cos. Written to
benchmarks/results/codes/certified.json.

Usage: python benchmarks/saved_codes.py [--codes DIR]
"""

import argparse
import hashlib
import json
import time
from pathlib import Path

from scale import certified  # the certification of scale.py's rows

from gnc_jax import theory
from gnc_jax.store import load_code

CODES = Path(__file__).parent / "results" / "codes"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--codes", type=Path, default=CODES)
    args = ap.parse_args()
    rows = []
    for path in sorted(args.codes.glob("*.npy")):
        t = time.perf_counter()
        W = load_code(path)
        d, K = W.shape
        rows.append(
            {"file": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "d": d, "K": K}
            | certified(W)
            | {"lp_max_cos_bound": theory.max_cos_lower_bound(d, K), "certify_s": time.perf_counter() - t}
        )
        print(json.dumps(rows[-1]), flush=True)
    (args.codes / "certified.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
