"""Importing gnc_jax changes nothing global; float64 is scoped to its calls; the allocator tuning is
explicit."""

import json
import os
import platform
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import SEARCH_LEAN, random_configuration, replace_the_search

import gnc_jax
from gnc_jax import SolverSettings

USER_CODE = """
import jax, jax.numpy as jnp, numpy as np
import gnc_jax
assert not jax.config.jax_enable_x64, "import turned float64 on"
s = gnc_jax.solve_tammes(3, 6, seed=0, solver=gnc_jax.SolverSettings(restarts=4, steps=300, hop_rounds=0))
assert not jax.config.jax_enable_x64, "a call left float64 on"
assert jnp.ones(2).dtype == jnp.float32
print(repr(s.W.dtype.name), repr(s.rho_one_vs_one))
"""


def test_import_and_calls_leave_the_users_jax_settings_alone():
    # In a fresh process: nothing of the test suite's own setup is involved.
    out = subprocess.run([sys.executable, "-c", USER_CODE], capture_output=True, text=True, check=True)
    dtype, rho = out.stdout.split()
    assert dtype == "'float64'"
    # The octahedron's chord sqrt(2) (Theorem: K = 2d), reached to float64 rounding, which a float32
    # computation (eps 1.2e-7) could not certify.
    assert abs(float(rho) - np.sqrt(2)) < 1e-13


def test_float64_inside_a_call_and_float32_outside():
    assert jnp.ones(2).dtype == jnp.float32
    W = random_configuration(0, 5, 9)
    G = W.T @ W  # numpy, float64
    off = ~np.eye(9, dtype=bool)
    # float32 would be off by ~1e-8 here (eps 1.2e-7 on values of order 1)
    assert abs(gnc_jax.max_cos(W) - G[off].max()) < 1e-15
    assert abs(gnc_jax.tammes_margin(W) - np.sqrt(2 - 2 * G[off].max())) < 1e-14
    assert jnp.ones(2).dtype == jnp.float32


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_allocator_tuning_applies_on_glibc_and_respects_the_user(monkeypatch):
    from gnc_jax._src.process import tune_allocator

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    assert tune_allocator() is True
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    assert tune_allocator() is False


def test_the_float64_scope_ends_with_the_call_even_on_error():
    with pytest.raises(ValueError, match="W"):
        gnc_jax.tammes_margin(np.zeros((1, 3)))
    assert not jax.config.jax_enable_x64


@pytest.mark.slow
def test_a_generator_computes_each_item_in_float64_and_yields_to_float32():
    from gnc_jax.related import gsl

    rows = gsl.near_independence_rows(nx=6, ny=4, k=1, epsilon=0.5, seed=0)
    first = next(rows)
    assert not jax.config.jax_enable_x64  # the caller holds the item in its own mode
    # float64 inside: the Pythagorean identity to 1e-8 relative (float32 would leave ~1e-7 absolute)
    assert abs(first["pythagorean_residual"]) <= 1e-8 * first["independence_divergence"]
    assert [r["model"] for r in rows] == ["reverse", "joint"]


TWO_THREADS = """
import threading
import numpy as np
import gnc_jax

def certify(seed):
    rng = np.random.default_rng(seed)
    for _ in range(10):
        gnc_jax.separation(rng.normal(size=(8, 64)))

threads = [threading.Thread(target=certify, args=(s,), daemon=True) for s in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join(timeout=100)
print("hung" if any(t.is_alive() for t in threads) else "finished")
"""


def test_certifying_from_two_threads_at_once_finishes():
    # Before process.one_at_a_time, two threads certifying (8, 64) configurations blocked both
    # workers of XLA:CPU's 2-thread pool in batched LAPACK calls forever (3 of 3 runs; gnc-jax sweep
    # with its 2 workers hung the same way). In a subprocess, so that a hang cannot take pytest along.
    out = subprocess.run([sys.executable, "-c", TWO_THREADS], capture_output=True, text=True, timeout=150)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "finished"


def test_compiled_programs_are_released_when_the_memory_maps_crowd():
    # Linux (CI): every compiled program keeps memory maps; past the threshold the caches are dropped
    # and a jitted function compiles again (counted by its traces); below it nothing happens.
    from gnc_jax._src import process

    traces = []

    @jax.jit
    def f(x):
        traces.append(1)
        return x * 2

    f(jnp.ones(3))
    assert not process.release_compiled_programs(fraction=1.0)  # maps never exceed the limit
    f(jnp.ones(3))
    assert len(traces) == 1
    assert process.release_compiled_programs(fraction=1e-9)
    f(jnp.ones(3))
    assert len(traces) == 2


BUDGET = SolverSettings(restarts=2, steps=100, hop_rounds=0, lp_polish_iters=0)


@pytest.mark.slow
@pytest.mark.parametrize("asked", [False, True], ids=["library default", "release_memory=True"])
def test_memory_is_released_only_when_asked(monkeypatch, tmp_path, asked):
    # jax.clear_caches() would drop the caller's compiled programs too: a library call asks whether
    # to release only when the caller said so (the gnc-jax command does). One worker, so that the
    # sweep's batches finish one at a time and it asks once per batch, whatever the machine's speed.
    from gnc_jax._src import batch, sweep

    calls = []
    monkeypatch.setattr(sweep, "release_compiled_programs", lambda: calls.append("sweep"))
    monkeypatch.setattr(batch, "release_compiled_programs", lambda: calls.append("pair"))
    out = tmp_path / "s.csv"
    sweep.sweep(
        "tammes",
        [2],
        [3, 4],
        out=out,
        seed=0,
        batch_size=1,
        workers=1,
        progress=None,
        release_memory=asked,
        solver=BUDGET,
    )
    # A pair below the search's range and a searched one: it asks after the search, which compiled
    # programs of its own (the search itself stands in: its result is a random configuration).
    replace_the_search(monkeypatch)
    gnc_jax.solve_pairs(
        "tammes",
        [(3, 5), (3, 13)],
        seed=0,
        release_memory=asked,
        solver=BUDGET,
        search=SEARCH_LEAN.replace(population=2),
    )
    assert calls == (["sweep", "sweep", "pair"] if asked else [])


USER_SESSION = """
import jax, jax.numpy as jnp, matplotlib, tempfile
from unittest import mock
import gnc_jax
from gnc_jax._src import batch, cli, process
matplotlib.use("pdf")  # the user's own backend
traces = []
@jax.jit
def f(x):
    traces.append(1)
    return x + 1
f(jnp.ones(2))
with mock.patch.object(batch, "release_compiled_programs", lambda: jax.clear_caches()), \
        mock.patch.object(process, "tune_allocator", side_effect=AssertionError("mallopt from main()")):
    gnc_jax.solve_pairs(
        "tammes", [(3, 13)], seed=0,
        solver=gnc_jax.SolverSettings(restarts=2, steps=100, hop_rounds=0, lp_polish_iters=0),
        search=gnc_jax.SearchSettings(population=4, rounds=1, symmetric_starts=0, init_steps=100,
                                      long_finish_steps=0, energy_members=0, cross_seed=False))
    gnc_jax.plots.plot_store([], tempfile.mkdtemp())
    assert cli.main(["table", "/nonexistent.csv"]) == 2
f(jnp.ones(2))
print(len(traces), matplotlib.get_backend())
"""


@pytest.mark.slow
def test_library_calls_leave_the_callers_caches_backend_and_allocator_alone():
    # In a fresh process: the caller's jitted function is not traced again after a solve (no
    # jax.clear_caches), its matplotlib backend is the one it chose, and main() does not call mallopt.
    out = subprocess.run([sys.executable, "-c", USER_SESSION], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-2:] == ["1", "pdf"]


def test_the_command_tunes_the_allocator_and_main_does_not(monkeypatch):
    from gnc_jax._src import cli, process

    calls = []
    monkeypatch.setattr(process, "tune_allocator", lambda: calls.append("allocator"))
    monkeypatch.setattr(process, "use_compilation_cache", lambda: calls.append("cache"))
    monkeypatch.setattr(sys, "argv", ["gnc-jax", "table", "/nonexistent.csv"])
    with pytest.raises(SystemExit) as e:
        cli.program()
    assert e.value.code == 2 and calls == ["allocator", "cache"]


def test_the_compilation_cache_goes_where_the_user_says(monkeypatch, tmp_path):
    from gnc_jax._src.process import use_compilation_cache

    before = jax.config.jax_compilation_cache_dir
    try:
        monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR")  # set by conftest for the suite
        monkeypatch.delenv("GNC_JAX_CACHE_DIR", raising=False)
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
        assert use_compilation_cache() == str(tmp_path / "gnc_jax" / "xla")
        assert jax.config.jax_compilation_cache_dir == str(tmp_path / "gnc_jax" / "xla")
        monkeypatch.setenv("GNC_JAX_CACHE_DIR", str(tmp_path / "mine"))
        assert use_compilation_cache() == str(tmp_path / "mine")
        jax.config.update("jax_compilation_cache_dir", before)
        monkeypatch.setenv("GNC_JAX_CACHE_DIR", "")  # off
        assert use_compilation_cache() is None and jax.config.jax_compilation_cache_dir == before
        monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "jax"))  # JAX's own wins
        monkeypatch.setenv("GNC_JAX_CACHE_DIR", str(tmp_path / "mine"))
        assert use_compilation_cache() is None and jax.config.jax_compilation_cache_dir == before
    finally:
        jax.config.update("jax_compilation_cache_dir", before)


@pytest.mark.slow
def test_a_command_run_again_loads_its_programs_and_gives_the_same_bits(tmp_path):
    # Two processes of one command with the cache on (every program cached, however fast it compiled):
    # the first fills the cache, the second's answer is the first's to the last bit.
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    env |= {"GNC_JAX_CACHE_DIR": str(tmp_path / "cache"), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
    command = [sys.executable, "-m", "gnc_jax", "solve", "softmax-code", "--d", "3", "--K", "7"]
    command += ["--restarts", "4", "--format", "json", "--save", str(tmp_path)]
    runs, files = [], []
    for _ in range(2):
        out = subprocess.run(command, capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr
        (saved,) = tmp_path.glob("*.npy")
        row = {k: v for k, v in json.loads(out.stdout).items() if k != "wall_s"}
        runs.append((row, np.load(saved).tobytes()))
        files.append(sorted(p.name for p in (tmp_path / "cache").iterdir()))
    assert files[0] and files[1] == files[0]  # the second run compiled nothing new
    assert runs[1] == runs[0]


LEVEL_CODE = """
import gnc_jax
from gnc_jax import SearchSettings, SolverSettings
t = gnc_jax.solve_tammes(3, 13, seed=0, solver=SolverSettings(restarts=8, hop_rounds=1),
                         search=SearchSettings(population=8, patience=3, cross_seed=False))
s = gnc_jax.solve_softmax_code(4, 10, seed=0, solver=SolverSettings(restarts=8, hop_rounds=1))
print(repr(t.min_angle_deg), repr(s.rho_one_vs_rest))
"""


@pytest.mark.slow
def test_xla_optimisation_levels_give_the_same_codes():
    """The test tiers run XLA's -O0 backend (faster compiles); users run its default level. The same
    solves in two fresh processes, one at each level, certify the same values (measured:
    57.1367030775781 deg at both, and margins one unit in the last place apart)."""

    values = []
    for flags in ("", "--xla_backend_optimization_level=0"):
        env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"} | (
            {"XLA_FLAGS": flags} if flags else {}
        )
        out = subprocess.run(
            [sys.executable, "-c", LEVEL_CODE], capture_output=True, text=True, env=env, check=True
        )
        values.append([float(v) for v in out.stdout.split()])
    np.testing.assert_allclose(values[0], values[1], rtol=0, atol=1e-9)
    assert abs(values[0][0] - 57.136703077578) < 1e-6  # the proven optimum at (3, 13), both levels


def test_a_batched_lapack_program_runs_with_openblas_on_one_thread():
    # During a program of one_at_a_time, the OpenBLAS whose LAPACK XLA:CPU calls runs on one thread
    # (read from inside the program by a host callback); before and after, the caller's setting.
    from threadpoolctl import ThreadpoolController

    from gnc_jax._src.process import one_at_a_time

    threads = lambda: {lib["num_threads"] for lib in ThreadpoolController().select(user_api="blas").info()}
    seen = []

    def program(A):
        jax.debug.callback(lambda _: seen.append(threads()), A)
        return jnp.linalg.cholesky(A)

    with ThreadpoolController().select(user_api="blas").limit(limits=2):
        one_at_a_time(jax.jit(program))(jnp.eye(3))
        after = threads()
    assert seen == [{1}] and after == {2}
