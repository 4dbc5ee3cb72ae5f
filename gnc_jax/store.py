"""The append-only CSV results store that sweeps write and ``gnc-jax table`` / ``plot`` read, and
codes as plain ``.npy`` / ``.npz`` files (:func:`save_code`, :func:`load_code`).

The public face of :mod:`gnc_jax._src.store` and :mod:`gnc_jax._src.code_files`."""

from gnc_jax._src.code_files import load_code, save_code

from gnc_jax._src.store import (
    STORE_FORMAT,
    COLUMNS,
    SCORE,
    StoreError,
    ResultsStore,
    load,
    best,
    load_config,
    read_rows,
    row_key,
    sort_key,
    upgrade,
    save,
)

__all__ = [
    "STORE_FORMAT",
    "COLUMNS",
    "SCORE",
    "StoreError",
    "ResultsStore",
    "load",
    "best",
    "load_config",
    "read_rows",
    "row_key",
    "sort_key",
    "upgrade",
    "save",
    "save_code",
    "load_code",
]
