"""Shared fixtures. Importing gnc_jax enables float64 in JAX."""

import csv
import os
from pathlib import Path

# One persistent compilation cache for the whole run: both xdist workers and every subprocess the
# tests start (CLI calls, notebook kernels) reuse a bucket solver compiled once. It starts empty on a
# clean clone (`make clean` removes it), so it shares compilations, never results between runs.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(Path(__file__).parents[1] / ".jax_cache"))
# The suite's time is mostly XLA compiling small programs that then run briefly: LLVM's -O0 backend
# cuts that CPU time by about a third (benchmarks and the CLI keep XLA's default optimisation).
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")

import jax  # noqa: E402
import numpy as np
import pytest

import gnc_jax  # noqa: F401  (enables jax_enable_x64)

DATA = Path(__file__).parent / "data"


def known_tammes():
    """Rows of the proven/best-known Tammes table (a copy of shared/reference/tammes_known.csv)."""
    with open(DATA / "tammes_known.csv") as f:
        return [
            dict(
                d=int(r["d"]),
                K=int(r["K"]),
                angle=float(r["min_angle_deg"]),
                cos=float(r["max_cos"]),
                proven=r["proven_optimal"] == "1",
                what=r["what"],
            )
            for r in csv.DictReader(f)
        ]


def random_configuration(seed, d, K):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((d, K))
    return W / np.linalg.norm(W, axis=0)


@pytest.fixture(autouse=True)
def _float64():
    assert jax.config.jax_enable_x64
