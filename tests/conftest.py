"""Shared fixtures. The suite runs as a user would: JAX in its default float32 mode, float64 only
inside gnc_jax's calls (and in the tests that opt in with the ``x64`` fixture)."""

import csv
import os
from pathlib import Path

# One persistent compilation cache for the whole run: both xdist workers and every subprocess the
# tests start (CLI calls, notebook kernels) reuse a bucket solver compiled once. It starts empty on a
# clean clone (`make clean` removes it), so it shares compilations, never results between runs.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(Path(__file__).parents[1] / ".jax_cache"))
# XLA's optimisation level is the user's (the default, as in production) unless XLA_FLAGS says
# otherwise: `make test` and `make test-all` ask for LLVM's -O0, which cuts compile time by about a
# third; tests/test_process.py checks that both levels certify the same codes.

import jax  # noqa: E402
import numpy as np
import pytest

import gnc_jax  # noqa: F401
from gnc_jax import SearchSettings
from gnc_jax._src.process import release_compiled_programs

DATA = Path(__file__).parent / "data"

# The search's keywords without its costlier sources (softmax seed, long finish, energy members): for
# tests that check results at small K or the plumbing, not the portfolio.
SEARCH_LEAN = SearchSettings(cross_seed=False, long_finish_steps=0, energy_members=0)


@pytest.fixture(autouse=True)
def _nothing_kept_between_tests(monkeypatch):
    """Every test starts without the results a solve keeps for the next one (the last certification,
    Tammes solve and anneal): a test's stand-ins must not reach another test, whatever the order."""
    from gnc_jax._src import batch

    monkeypatch.setattr(batch, "_LAST_SEPARATION", [])
    monkeypatch.setattr(batch, "_LAST_TAMMES", [])
    monkeypatch.setattr(batch, "_LAST_ANNEAL", [])


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


def stand_in_search(d, Ks, *args):
    """A stand-in for ``gnc_jax._src.search.search_stack``: a random configuration per pair, reported
    as a search that ended at its round cap."""
    from gnc_jax._src.search import SearchResult

    results = []
    for K in Ks:
        W = random_configuration(K, d, K)
        results.append(
            SearchResult(W, gnc_jax.tammes_margin(W), 0, 0.0, False, "rounds", 1, 0, (), float("nan"))
        )
    return results


def replace_the_search(monkeypatch, search=stand_in_search):
    """``solve_pairs`` runs ``search`` instead of the search (``search_stack``'s arguments) and
    compiles none of the search's programs ahead."""
    from gnc_jax._src import batch

    monkeypatch.setattr(batch, "search_stack", search)
    monkeypatch.setattr(batch, "compile_ahead", lambda *args: None)


@pytest.fixture(autouse=True)
def _no_global_x64():
    """Importing gnc_jax changes no global JAX setting, and neither does calling it."""
    assert not jax.config.jax_enable_x64
    yield
    assert not jax.config.jax_enable_x64


@pytest.fixture(autouse=True)
def _bounded_memory_maps():
    """After each test, JAX's compiled programs are dropped when this worker's memory maps pass half
    the kernel's limit (the rule the gnc-jax command follows, gnc_jax._src.process): a worker of the
    full suite compiles hundreds of programs, and at the limit LLVM's compiler crashes the process."""
    yield
    release_compiled_programs()


@pytest.fixture
def x64():
    """float64 for one test that calls JAX internals itself (scoped, as gnc_jax's public functions do)."""
    with jax.enable_x64(True):
        yield
