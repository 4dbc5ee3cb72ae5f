"""Process-wide setup done once when gnc_jax is imported.

* float64 in JAX (``jax_enable_x64``): certified numbers are float64.
* glibc's allocator: XLA:CPU allocates a step's temporaries (megabytes for a batch of restarts) on
  every iteration of a compiled loop. With glibc's adaptive defaults these go to fresh ``mmap``
  pages or are trimmed back to the OS after each step, and the page faults slowed the d=3, K=24
  benchmark 2.2x (benchmarks/bench_solvers.py). Fixing the mmap threshold at its maximum (32 MiB)
  and keeping up to 256 MiB of freed heap removes that. Skipped off glibc, and when the user set
  either threshold through glibc's environment variables.
"""

import ctypes
import ctypes.util
import os

import jax

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def enable_float64() -> None:
    jax.config.update("jax_enable_x64", True)


def tune_glibc_malloc(mmap_threshold: int = 32 << 20, trim_threshold: int = 256 << 20) -> bool:
    """Set glibc's mmap and trim thresholds; returns whether they were set."""
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
