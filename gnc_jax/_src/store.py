"""The results store of a sweep: an append-only CSV file, one row per finished instance.

A row holds an instance's key (problem, d, K, n, tau), its certified float64 values, the path of
its configuration (``.npy`` files in ``<store>_configs/`` beside the store, written atomically before
the row) and provenance (seed, solver settings, package version, device, time). Rows are appended
with one ``write`` each batch and flushed to disk, so a sweep killed at any point (even SIGKILL)
leaves complete rows, at most a torn last line (dropped when the store is next opened for writing)
and never a row without its configuration. A lock file keeps two sweeps from writing one store.

The header is the schema: a file whose header differs is refused as written by an incompatible
version (it is never rewritten). Older formats are read but not appended to: format 3 (before the
``search_*`` columns: how a pair's global search ended, :class:`~gnc_jax._src.search.SearchStats`)
with those None, format 2 (before the ``status_note`` column too: why an inner solver failed, for a
``failed`` row) with ``status_note`` None, and format 1 (before the ``residual`` column too: the number
that decided a row's status) with ``residual`` None and its status words as written then
(``converged`` among them). :func:`upgrade` rewrites a format-2 or format-3 store as format 4 so that
a sweep can resume it. Several stores (runs, or the shards that the
hosts of a multi-host sweep write) are read together with :func:`load`, and :func:`best` keeps the best
row per instance.
"""

from __future__ import annotations

import csv
import fcntl
import io
import json
import math
import os
import typing
from pathlib import Path

import numpy as np

from gnc_jax._src import registry
from gnc_jax._src.errors import InvalidArgument
from gnc_jax._src.search import SearchStats

STORE_FORMAT = 4
KEY = ("problem", "d", "K", "n", "tau")
# The certified measures of a solution (:class:`gnc_jax._src.geometry.Separation`'s scalars).
CERTIFIED = ("min_angle_deg", "max_cos", "rho_one_vs_one", "rho_one_vs_rest", "rho_lower", "certificate_gap")
_FEATURES = ("loss", "gnc1", "gnc2", "gnc3")
# How a pair's global search ended (:meth:`SearchStats.summary`), with each field's type; empty where
# no search ran.
_SEARCH_TYPES = {f"search_{field}": kind for field, kind in typing.get_type_hints(SearchStats).items()}
SEARCH = tuple(_SEARCH_TYPES)
_PROVENANCE = ("seed", "settings", "version", "device", "store_format", "finished_at")
_RUN = ("hits", "restarts", "wall_s", "config", *_PROVENANCE)
COLUMNS = (
    *KEY,
    *CERTIFIED,
    "n_rattlers",
    "rattlers",
    *_FEATURES,
    "status",
    "residual",
    "status_note",
    *SEARCH,
    *_RUN,
)
# The columns of each format this version reads (only STORE_FORMAT is appended to).
_FORMATS = {
    STORE_FORMAT: COLUMNS,
    3: tuple(c for c in COLUMNS if c not in SEARCH),
    2: tuple(c for c in COLUMNS if c not in (*SEARCH, "status_note")),
    1: tuple(c for c in COLUMNS if c not in (*SEARCH, "status_note", "residual")),
}
_MISSING = {3: "no search columns", 2: "no status_note column", 1: "no residual column"}
_UPGRADABLE = (2, 3)  # the formats :func:`upgrade` rewrites
INT_COLUMNS = {"d", "K", "n", "n_rattlers", "hits", "restarts", "seed", "store_format"}
INT_COLUMNS |= {c for c, kind in _SEARCH_TYPES.items() if kind is int}
FLOAT_COLUMNS = {"tau", *CERTIFIED, *_FEATURES, "residual", "wall_s"}
FLOAT_COLUMNS |= {c for c, kind in _SEARCH_TYPES.items() if kind is float}
# What "best" means per problem: the column and whether larger is better.
SCORE = {f.name: (f.score, f.larger_is_better) for f in registry.FAMILIES if f.stored}


class StoreError(InvalidArgument):
    """A store that cannot be used as asked (path, format, settings, lock); nothing was written."""


def row_key(row: dict) -> tuple:
    """The instance a row solves: one row per key is a store's best (:func:`best`).

    Args:
      row: a store row (or an instance's fields).

    Returns:
      (problem, d, K, n, tau), with None where the problem has no n or tau.

    >>> row_key({"problem": "tammes", "d": 3, "K": 13, "n": None, "tau": None})
    ('tammes', 3, 13, None, None)
    """
    return tuple(row.get(k) for k in KEY)


def _encode(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)):  # numpy's repr would be "np.float64(...)"
        value = float(value)
        return "nan" if math.isnan(value) else repr(value)  # repr round-trips float64 exactly
    return str(value)


def _decode(name: str, text: str):
    if text == "":
        return None
    if name in INT_COLUMNS:
        return int(text)
    if name in FLOAT_COLUMNS:
        return float(text)
    return text


def _header_line(columns=COLUMNS) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(columns)
    return buf.getvalue()


def read_rows(path, writable: bool = False) -> list[dict]:
    """The rows of one store, typed (ints, floats, None for empty); a torn last line (a sweep killed
    mid-write) is ignored.

    Args:
      path: the store's path (CSV).
      writable: refuse every format but the current one (a store a sweep will append to).

    Returns:
      The rows, as dicts of the store's columns.

    Raises:
      StoreError: a missing file, or a format this version does not read.
    """
    fmt, rows = _read(path)
    if fmt != STORE_FORMAT and writable:
        raise StoreError(
            f"{str(path)!r} is a results store of format {fmt} ({_MISSING[fmt]}): it can be read, not "
            "appended to; write to a new store"
            + (" or upgrade it (gnc_jax.store.upgrade)" if fmt in _UPGRADABLE else "")
        )
    return rows


def _read(path) -> tuple[int, list[dict]]:
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise StoreError(f"no results store at {str(path)!r}") from None
    except OSError as e:
        raise StoreError(f"cannot read {str(path)!r}: {e.strerror}") from None
    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    lines = text.splitlines(keepends=True)
    fmt = {_header_line(cols): f for f, cols in _FORMATS.items()}.get(lines[0] if lines else None)
    if fmt is None:
        raise StoreError(
            f"{str(path)!r} is not a gnc_jax results store of format {STORE_FORMAT} (its header differs: "
            "written by an incompatible version, or not a store)"
        )
    rows = []
    for rec in csv.DictReader(lines):
        row = {k: _decode(k, rec.get(k, "")) for k in COLUMNS}
        if row["store_format"] != fmt:
            raise StoreError(f"{str(path)!r} holds rows of store format {row['store_format']}, not {fmt}")
        rows.append(row)
    return fmt, rows


def upgrade(path) -> int:
    """Rewrite a format-2 or format-3 store as format 4 in place (atomically, holding its lock) so that
    a sweep can resume it. The ``search_*`` columns are empty (not recorded then); a format-2 store's
    ``status_note`` is empty too, except on ``failed`` rows, whose reason format 2 did not keep:
    "reason not recorded (store format 2)".

    Args:
      path: the store's path (CSV).

    Returns:
      Its number of rows.

    Raises:
      StoreError: a store of any other format.
    """
    path = Path(path)
    if not path.is_file():
        raise StoreError(f"no results store at {str(path)!r}")
    lock = _lock(path)
    try:
        fmt, rows = _read(path)
        if fmt not in _UPGRADABLE:
            raise StoreError(f"{str(path)!r} is a results store of format {fmt}, not 2 or 3")
        for r in rows:
            r["store_format"] = STORE_FORMAT
            if fmt == 2:
                r["status_note"] = "reason not recorded (store format 2)" if r["status"] == "failed" else ""
        _write_atomically(path, rows)
    finally:
        _unlock(lock)
    return len(rows)


def save(path, rows: list[dict]) -> None:
    """Write ``rows`` as a complete store, atomically: a table built from other stores (e.g. the
    one shipped with gnc_jax).

    Args:
      path: the store's path (CSV).
      rows: rows of the current format.
    """
    for r in rows:
        if r.get("store_format") != STORE_FORMAT:
            raise StoreError(f"rows must be of store format {STORE_FORMAT}, got {r.get('store_format')!r}")
    _write_atomically(Path(path), rows)


def _write_atomically(path: Path, rows: list[dict]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(_header_line() + _lines(rows))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _lock(path: Path):
    """The store's lock file, held (exclusive); :class:`StoreError` if another sweep holds it."""
    try:
        lock = open(path.with_name(path.name + ".lock"), "w")  # noqa: SIM115
    except OSError as e:  # e.g. root on a read-only file system, where os.access says yes
        raise StoreError(f"store {str(path)!r} is not writable ({e.strerror})") from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise StoreError(f"{str(path)!r} is being written by another sweep") from None
    return lock


def _unlock(lock) -> None:
    if not lock.closed:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()


def _lines(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for r in rows:
        w.writerow([_encode(r.get(k)) for k in COLUMNS])
    return buf.getvalue()


def load(paths) -> list[dict]:
    """Rows of several stores together, each with ``source``: the file it came from.

    Args:
      paths: store paths (CSV), or one path.

    Returns:
      The rows of every store, typed (:func:`read_rows`), in order.
    """
    rows = []
    for p in paths:
        rows += [r | {"source": str(p)} for r in read_rows(p)]
    return rows


def best(rows: list[dict]) -> list[dict]:
    """The best row per instance (:func:`row_key`) by its problem's certified score (``SCORE``).

    Args:
      rows: store rows (e.g. from :func:`load`).

    Returns:
      One row per instance, in key order; of rows with the same score, the first whose status is not
      ``failed`` (e.g. a failed polish solved again).
    """
    out: dict[tuple, dict] = {}
    for r in rows:
        col, larger = SCORE[r["problem"]]
        v = r[col]
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        k = row_key(r)
        if (
            k not in out
            or (v > out[k][col] if larger else v < out[k][col])
            or (v == out[k][col] and out[k]["status"] == "failed" != r["status"])
        ):
            out[k] = r
    return [out[k] for k in sorted(out, key=sort_key)]


def sort_key(key: tuple) -> tuple:
    """An order of :func:`row_key` tuples (None, absent n or tau, first).

    Args:
      key: (problem, d, K, n, tau).

    Returns:
      A tuple that sorts without comparing None to numbers.
    """
    problem, d, K, n, tau = key
    return (problem, d, K, -1 if n is None else n, -1.0 if tau is None else tau)


def config_dir(path) -> Path:
    path = Path(path)
    return path.with_name(path.stem + "_configs")


def load_config(store_path, row: dict) -> dict[str, np.ndarray]:
    """The saved configuration of a row. A store keeps it in ``<stem>_configs/``; a table built from
    stores (the one shipped with gnc_jax) in one archive beside it, ``<store>.npz``, where the row's
    ``config`` names the arrays.

    Args:
      store_path: the store's path (CSV).
      row: one of its rows.

    Returns:
      {'W': (d, K)} plus 'H' (d, n K) for hardmax and ufm rows (float64).
    """
    archive = Path(store_path).with_suffix(".npz")
    if archive.is_file():
        with np.load(archive) as npz:
            return {"W": np.asarray(npz[row["config"]])}
    base = Path(store_path).parent / row["config"]
    out = {"W": np.load(base)}
    h = base.with_name(base.name.replace("_W.npy", "_H.npy"))
    if h != base and h.exists():
        out["H"] = np.load(h)
    return out


class ResultsStore:
    """An open store for appending (a context manager holding the store's lock).

    Opening creates the file with its header if it does not exist, refuses a file of another format,
    an unwritable location or a store locked by another sweep, and drops a torn last line.

    Args:
      path: the store's path (CSV).

    Attributes:
      path: the store's path.
      rows: its rows, typed (:func:`read_rows`), including those appended since it was opened.
    """

    def __init__(self, path):
        self.path = Path(path)
        parent = self.path.parent
        if self.path.is_dir():
            raise StoreError(f"store {str(self.path)!r} is a directory, not a file")
        if not parent.is_dir():
            raise StoreError(f"store {str(self.path)!r}: directory {str(parent)!r} does not exist")
        if not os.access(parent, os.W_OK) or (self.path.exists() and not os.access(self.path, os.W_OK)):
            raise StoreError(f"store {str(self.path)!r} is not writable")
        self._lock = _lock(self.path)
        try:
            if self.path.exists() and self.path.stat().st_size > 0:
                self.rows = read_rows(self.path, writable=True)  # checks the format before any write
                self._drop_torn_line()
            else:
                self._create()
                self.rows = []
        except BaseException:
            self.close()
            raise
        self.configs = config_dir(self.path)

    def _create(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w") as f:
            f.write(_header_line())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def _drop_torn_line(self) -> None:
        with open(self.path, "rb+") as f:
            data = f.read()
            if not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)

    def finished(self) -> dict[tuple, dict]:
        return {row_key(r): r for r in self.rows}

    def _config_path(self, stem: str) -> str:
        """The W file of ``stem`` as a row's ``config`` names it: relative to the store's directory."""
        return str((self.configs / f"{stem}_W.npy").relative_to(self.path.parent))

    def unused_stem(self, stem: str) -> str:
        """``stem``, or the first of ``stem_1``, ``stem_2``, ... whose configuration no row of the
        store names: a pair stored again (from another seed or start) keeps the earlier row's file."""
        used, name, n = {r["config"] for r in self.rows}, stem, 0
        while self._config_path(name) in used:
            n += 1
            name = f"{stem}_{n}"
        return name

    def save_config(self, stem: str, arrays: dict[str, np.ndarray]) -> str:
        """Write ``<stem>_<name>.npy`` per array atomically; returns the W file's path relative to
        the store's directory."""
        self.configs.mkdir(exist_ok=True)
        for name, a in arrays.items():
            target = self.configs / f"{stem}_{name}.npy"
            tmp = target.with_name(target.name + ".tmp")
            with open(tmp, "wb") as f:
                np.save(f, np.asarray(a, np.float64))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        return self._config_path(stem)

    def append(self, rows: list[dict]) -> None:
        """Append complete rows with one write, then flush them to disk."""
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, _lines(rows).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        self.rows += [{k: r.get(k) for k in COLUMNS} for r in rows]

    def close(self) -> None:
        _unlock(self._lock)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def settings_conflict(
    rows: list[dict], problem: str, settings_json: str, added: dict | None = None
) -> str | None:
    """A message naming the settings that differ between this run and the store's rows of
    ``problem``, or None. ``added``: settings introduced after rows were written, with the value
    that reproduces the earlier behaviour; a row without such a key agrees with a run at that value.
    A row whose settings name an ``initial`` start (a sweep's neighbour pass, benchmarks/monotone.py)
    was solved from a configuration outside the grid, and is not compared."""
    new, added = json.loads(settings_json), added or {}
    for r in rows:
        if r["problem"] != problem or r["settings"] == settings_json:
            continue
        old = json.loads(r["settings"])
        if "initial" in old:
            continue
        diffs = [
            f"{k} {old.get(k)!r} in the store, {new.get(k)!r} now"
            for k in sorted(set(old) | set(new))
            if old.get(k) != new.get(k) and not (k not in old and k in added and new.get(k) == added[k])
        ]
        if diffs:
            return "; ".join(diffs)
    return None
