"""The append-only CSV results store that sweeps write and ``gnc-jax table`` / ``plot`` read.

The public face of :mod:`gnc_jax._src.store`."""

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
]
