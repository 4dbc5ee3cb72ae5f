"""Process-wide setup at import: float64 and the allocator thresholds."""

import platform

import jax
import pytest

from gnc_jax import _process


def test_float64_is_on_after_import():
    assert jax.config.jax_enable_x64


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_malloc_tuning_applies_on_glibc_and_respects_the_user(monkeypatch):
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    assert _process.tune_glibc_malloc() is True
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    assert _process.tune_glibc_malloc() is False
