"""What gnc_jax does to JAX's settings and to the process: nothing global unless asked.

* :func:`float64` scopes ``jax_enable_x64`` to one call of a public function (``jax.enable_x64``,
  a thread-local setting): certified numbers are float64 while the caller's own JAX code keeps its
  settings. Importing gnc_jax changes no setting.
* :func:`one_at_a_time` runs the programs that call LAPACK on batches (the least squares of the
  hull's exact QPs) one thread at a time. XLA:CPU runs a batched LAPACK call on a worker of its
  intra-op pool, which splits the batch into tasks for that same pool and blocks until they finish:
  two such calls at once, from two threads on a 2-core CPU (two pool workers), each wait for tasks
  that only the other's worker could run, forever. ``gnc-jax sweep`` with its default 2 workers hung
  that way at d = 7 (both workers blocked in ``lapack_dgesdd``); so did two threads calling
  ``gnc_jax.separation`` on (8, 64) configurations (tests/test_process.py). Meanwhile OpenBLAS
  runs on one thread (``threadpoolctl``, restored after the call): the matrices of a batch are small
  (a few hundred rows), its threads only synchronise, and beside XLA's own pool, or another process,
  they oversubscribe the cores (the interior-point solve of the Tammes search, measured in
  docs/results.md).
* :class:`CompiledAhead` compiles a jitted program on a background thread before its first call:
  the search's programs and the certification of its code compile (about 16 s of a d = 3, K = 60
  Tammes solve on a 2-core CPU) while the cross-seeded solve and the symmetric starts run, which
  leave the second core mostly idle. XLA releases the GIL while it compiles; the compiled program is
  the one the call would have compiled, so the answer is the same bit for bit.
* :func:`tune_allocator` (called by the ``gnc-jax`` command and
  the benchmarks, never on import): XLA:CPU allocates a step's temporaries (megabytes for a batch of
  restarts) on every iteration of a compiled loop. With glibc's adaptive defaults these go to fresh
  ``mmap`` pages or are trimmed back to the OS after each step, and the page faults slowed the d=3,
  K=24 benchmark 2.2x (benchmarks/bench_solvers.py). Fixing the mmap threshold at its maximum
  (32 MiB) and keeping up to 256 MiB of freed heap removes that. Skipped off glibc, and when the
  user set either threshold through glibc's environment variables.
* :func:`use_compilation_cache` (called by the ``gnc-jax`` command, never on import): JAX's persistent
  compilation cache in ``~/.cache/gnc_jax/xla`` (``$XDG_CACHE_HOME`` honoured), so that a second
  process solving a pair of the same sizes (another seed, a resumed sweep) loads the compiled search
  instead of compiling it again: a d = 3, K = 110 Tammes solve compiles for about 40 s on a 2-core
  CPU (docs/results.md). A loaded program is the one that was compiled, so the answer is
  the same bit for bit. ``GNC_JAX_CACHE_DIR`` moves it; set empty, it turns it off; JAX's own
  ``JAX_COMPILATION_CACHE_DIR`` takes precedence over both.
* :func:`release_compiled_programs` (called, when the caller asks with ``release_memory=True`` as the
  ``gnc-jax`` command does, after each finished batch of a sweep and each search (a pair or a stack) of
  :func:`gnc_jax.solve_pairs`, which may be given ~100 pairs at once): every
  compiled XLA:CPU program keeps ~500 memory maps (the search's two programs of one (d, K) at d = 3),
  and JAX keeps every program it compiled. A sweep over ~100 pairs reached Linux's default limit of
  65530 maps per process (``vm.max_map_count``); LLVM then failed with "Cannot allocate memory" and
  the process died (twice, after 57 min and more, in sweeps of d = 3, K up to 130). Dropping JAX's
  compilation caches once the maps pass half the limit keeps them bounded. ``jax.clear_caches`` also
  drops the caller's compiled programs, so a library call does it only when asked.
"""

import ctypes
import ctypes.util
import functools
import inspect
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import jax

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def float64(fn):
    """``fn`` run with float64 enabled in JAX for the duration of the call only (for a generator
    function: while it computes each item, not while the caller holds it)."""
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def scoped_items(*args, **kwargs):
            items = fn(*args, **kwargs)
            while True:
                with jax.enable_x64(True):
                    try:
                        item = next(items)
                    except StopIteration:
                        return
                yield item

        return scoped_items

    @functools.wraps(fn)
    def scoped(*args, **kwargs):
        with jax.enable_x64(True):
            return fn(*args, **kwargs)

    return scoped


def cpu_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


_LAPACK_BATCHES = threading.RLock()


@functools.cache
def _blas_libraries():
    """The BLAS libraries loaded in the process, scipy's OpenBLAS among them (whose LAPACK XLA:CPU
    calls; importing ``scipy.linalg`` loads it)."""
    import scipy.linalg  # noqa: F401
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController().select(user_api="blas")


def one_at_a_time(program):
    """``program`` (a jitted function whose computation calls LAPACK on batches) run by one thread of
    the process at a time, to completion, with OpenBLAS on one thread meanwhile (module docstring):
    the lock and the limit are held until its outputs are ready."""

    @functools.wraps(program)
    def exclusive(*args, **kwargs):
        with _LAPACK_BATCHES, _blas_libraries().limit(limits=1):
            return jax.block_until_ready(program(*args, **kwargs))

    return exclusive


_COMPILER = ThreadPoolExecutor(1, thread_name_prefix="gnc-compile")


class CompiledAhead:
    """A jitted program whose compilation for given argument shapes can start on a background
    thread (:meth:`start`); a call waits for the compilations started, then runs ``call`` (the program,
    or a wrapper of it such as :func:`one_at_a_time`), which finds the program compiled."""

    def __init__(self, program, call=None):
        self.program, self.call = program, call or program
        self.started: dict[tuple, Future] = {}

    def start(self, *args) -> None:
        """Compile for arguments of the shapes and dtypes of ``args`` (arrays or
        ``jax.ShapeDtypeStruct``), with this thread's float64 setting; once per signature."""
        specs = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args)
        signature = tuple((a.shape, str(a.dtype)) for a in specs)
        if signature not in self.started:
            x64 = jax.config.jax_enable_x64
            self.started[signature] = _COMPILER.submit(self._compile, specs, x64)

    def _compile(self, specs, x64: bool) -> None:
        with jax.enable_x64(x64):
            self.program.lower(*specs).compile()

    def __call__(self, *args):
        for future in self.started.values():
            future.exception()  # waits; where it failed, the call compiles again and reports its error
        return self.call(*args)


def tune_allocator(mmap_threshold: int = 32 << 20, trim_threshold: int = 256 << 20) -> bool:
    """Set glibc's mmap and trim thresholds for this process (see the module docstring); returns
    whether they were set (False off glibc or when ``MALLOC_MMAP_THRESHOLD_``,
    ``MALLOC_TRIM_THRESHOLD_`` or ``GLIBC_TUNABLES`` is set)."""
    if any(v in os.environ for v in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, mmap_threshold)) and bool(
        mallopt(_M_TRIM_THRESHOLD, trim_threshold)
    )


def use_compilation_cache() -> str | None:
    """Turn on JAX's persistent compilation cache for this process (module docstring); returns its
    directory, or None where it stays as the user set it (``JAX_COMPILATION_CACHE_DIR``, or
    ``GNC_JAX_CACHE_DIR`` empty)."""
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:
        return None
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gnc_jax" / "xla"
    directory = os.environ.get("GNC_JAX_CACHE_DIR", str(default))
    if not directory:
        return None
    jax.config.update("jax_compilation_cache_dir", directory)
    return directory


def release_compiled_programs(fraction: float = 0.5) -> bool:
    """``jax.clear_caches()`` when this process holds more than ``fraction`` of the kernel's limit of
    memory maps (``vm.max_map_count``; module docstring); programs still running keep theirs, later
    calls compile again. Returns whether the caches were dropped (never off Linux)."""
    try:
        limit = int(Path("/proc/sys/vm/max_map_count").read_text())
        with open("/proc/self/maps") as f:
            maps = sum(1 for _ in f)
    except (OSError, ValueError):
        return False
    if maps <= fraction * limit:
        return False
    jax.clear_caches()
    return True
