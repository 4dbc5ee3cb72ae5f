"""Resumable sweeps: every (d, K) (and n, tau) of a grid, solved in batches, appended to a store.

The grid is sorted by size bucket and cut into batches of ``batch`` instances; each batch is one
batched solver call (:func:`gnc_jax.solve_pairs` or :func:`gnc_jax._src.ufm.solve_ufm_instances`, sharded
over this process's devices), and its rows are appended to the :mod:`gnc_jax._src.store` as soon as it
returns. ``workers`` batches are in flight at once (threads): while one batch runs its compiled solve,
another compiles or runs its host-side certification and LP polish, so a sweep keeps the host's cores
busy where a loop over pairs leaves all but one idle; rows are appended as batches finish. An
instance's answer depends only on the seed, the instance and the settings, so re-running the same
command skips the finished rows and solves the rest: an interruption (Ctrl-C, SIGKILL) loses at most
the batches in flight.

Several hosts: with ``distributed=True`` (``gnc-jax sweep --distributed``) every process calls
``jax.distributed.initialize()`` (its arguments come from the environment on TPU pods, SLURM and
Open MPI, or give ``coordinator``, ``process_count`` and ``process_index``), takes every
``process_count``-th instance of the sorted grid, solves it on its local devices and writes its own
shard ``<stem>.part<i>of<n><suffix>``; ``gnc-jax table`` reads the shards together. The same split
without ``jax.distributed`` (``process_index`` / ``process_count`` given by hand, e.g. a job array)
works as well: hosts never communicate.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np

from gnc_jax._src import batch, registry, runner, store
from gnc_jax._src.process import float64, release_compiled_programs
from gnc_jax._src.driver import SolverSettings
from gnc_jax._src.errors import InvalidArgument
from gnc_jax._src.neighbours import neighbour_pass
from gnc_jax._src.search import SearchSettings
from gnc_jax._src.ufm import UFMSettings, solve_ufm_instances

PROBLEMS = registry.STORED


class Instance(NamedTuple):
    problem: str
    d: int
    K: int
    n: int | None = None
    tau: float | None = None

    def stem(self) -> str:
        s = f"{self.problem}_d{self.d}_K{self.K}"
        if self.n is not None:
            s += f"_n{self.n}"
        if self.tau is not None:
            s += f"_tau{self.tau:g}"
        return s


def grid(problem: str, ds, Ks, ns=None, taus=None) -> list[Instance]:
    """The instances of a sweep, validated (errors name the argument)."""
    if problem not in PROBLEMS:
        raise InvalidArgument(f"problem must be one of {PROBLEMS}, got {problem!r}")
    options = registry.family(problem).options
    registry.check_options(problem, [name for name, v in (("n", ns), ("tau", taus)) if v])
    ds, Ks = runner.positive_ints("d", list(ds)), runner.positive_ints("K", list(Ks))
    ns = runner.positive_ints("n", list(ns or [1]), minimum=1) if "n" in options else [None]
    taus = runner.positive_floats("tau", list(taus)) if "tau" in options else [None]
    return [Instance(problem, d, K, n, t) for d in ds for K in Ks for n in ns for t in taus]


def shard_path(out, index: int, count: int) -> Path:
    out = Path(out)
    return out if count == 1 else out.with_name(f"{out.stem}.part{index}of{count}{out.suffix}")


def device_description() -> str:
    devs = jax.local_devices()
    return f"{jax.default_backend()}:{len(devs)}x{devs[0].device_kind}"


def _first_done(pending: set[Future]) -> tuple[set[Future], set[Future]]:
    """(finished, still pending) once at least one of ``pending`` has finished, waiting in short
    steps so that Ctrl-C reaches the main thread at once."""
    while True:
        done, rest = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
        if done:
            return done, rest


def default_batch_size() -> int:
    """Instances per solver call: 32 on accelerators, where the batch's lanes run in parallel; 1 on
    CPU, where they do not, and where every distinct batch shape of a bucket is another (slower)
    compilation: there the workers' pipelining is what pays (benchmarks/sweep_throughput.py)."""
    return 1 if jax.default_backend() == "cpu" else 32


def _solve(
    instances: list[Instance], seed: int, solver, weight_decay: float, search=None, initial=None
) -> list:
    problem = instances[0].problem
    if problem == "ufm":
        return solve_ufm_instances(
            [(i.d, i.K, i.n, i.tau) for i in instances],
            weight_decay=weight_decay,
            seed=seed,
            solver=solver,
        )
    return batch.solve_pairs(
        problem,
        [(i.d, i.K) for i in instances],
        seed=seed,
        solver=solver,
        n=instances[0].n or 1,
        search=search,
        initial={(i.d, i.K): initial[i.d, i.K] for i in instances if (i.d, i.K) in initial} or None,
    )


def _other_problems_codes(st, problem: str, search, todo) -> dict:
    """{(d, K): [W, ...]}: the store's Tammes codes of the pairs ``todo``, the ``initial``
    candidates of a softmax-code sweep with ``cross_seed`` (the two problems seed each other across
    runs too, so a softmax code written beside a pair's Tammes row is never below that code's
    one-vs-rest margin); else {}."""
    if problem != "softmax-code" or search is None or not search.cross_seed:
        return {}
    codes, wanted = {}, {(i.d, i.K) for i in todo}
    for row in st.rows:
        if row["problem"] == "tammes" and (row["d"], row["K"]) in wanted:
            codes.setdefault((row["d"], row["K"]), []).append(store.load_config(st.path, row)["W"])
    return codes


def _unbound_limits(settings, instances) -> dict:
    """{"work_limit": its value} when the limit binds no pair of this sweep (the run is then the
    one before the limit existed, so rows written without the key agree), else {}."""
    limit = getattr(settings, "work_limit", None)
    if limit is None or any(
        settings.sized_for(i.d, i.K) != settings.replace(restarts=settings.restarts_for(i.d, i.K))
        for i in instances
    ):
        return {}
    return {"work_limit": limit}


def row_provenance(seed: int, settings_json: str) -> dict:
    """The provenance columns of a store row: seed, settings (JSON), version, device, store format."""
    import gnc_jax

    return {
        "seed": int(seed),
        "settings": settings_json,
        "version": gnc_jax.__version__,
        "device": device_description(),
        "store_format": store.STORE_FORMAT,
    }


def _row(inst: Instance, sol, config: str, provenance: dict) -> dict:
    s = sol.summary()
    row = {k: s.get(k) for k in store.COLUMNS if k in s} | inst._asdict()
    rattlers = getattr(sol, "rattlers", None)
    if rattlers is not None:
        row["rattlers"] = " ".join(map(str, np.asarray(rattlers).tolist()))
    return row | {"config": config, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S")} | provenance


class Progress:
    """One line on stderr per finished batch: a bar, counts, elapsed time and ETA."""

    def __init__(self, total: int, done: int, file=None, width: int = 30):
        self.total, self.start_done, self.file, self.width = total, done, file, width
        self.t0 = time.perf_counter()

    def update(self, done: int) -> None:
        if self.file is None:
            return
        elapsed = time.perf_counter() - self.t0
        new = done - self.start_done
        rate = new / elapsed if elapsed > 0 and new else None
        eta = _fmt((self.total - done) / rate) if rate else "?"
        filled = int(self.width * done / max(self.total, 1))
        bar = "#" * filled + "-" * (self.width - filled)
        print(
            f"sweep [{bar}] {done}/{self.total}  {_fmt(elapsed)} elapsed  ETA {eta}",
            file=self.file,
            flush=True,
        )


def _fmt(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


@dataclasses.dataclass
class SweepReport:
    path: Path
    total: int  # instances of this process's share of the grid
    skipped: int  # already in the store
    solved: int  # solved by this call
    wall_s: float
    improved: int = 0  # pairs whose code the neighbour pass raised


@float64
def _check_sweep(
    problem, seed, batch_size, workers, process_index, process_count, weight_decay, solver, search
):
    """The sweep's arguments checked (errors name the argument): its solver and search settings and
    its batch size (None: :func:`default_batch_size`, at least the search's ``stack``, since pairs
    searched together must be in one call)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvalidArgument(f"seed must be an integer >= 0, got {seed!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidArgument(f"workers must be an integer >= 1, got {workers!r}")
    if not (isinstance(process_count, int) and process_count >= 1 and 0 <= process_index < process_count):
        raise InvalidArgument(
            f"process_index must be in [0, process_count), got {process_index} of {process_count}"
        )
    family = registry.family(problem)
    if weight_decay and "weight_decay" not in family.options:
        raise InvalidArgument(f"weight_decay does not apply to the {problem} problem")
    settings = family.settings_type().given("solver", solver)
    if isinstance(settings, SolverSettings):  # the store records the limit its rows ran under
        settings = settings.with_device_limit()
    if family.takes_search:
        search = SearchSettings.given("search", search)
    elif search is not None:
        raise InvalidArgument(f"search does not apply to the {problem} problem")
    if batch_size is None:
        batch_size = max(default_batch_size(), search.stack if search is not None else 1)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidArgument(f"batch_size must be an integer >= 1, got {batch_size!r}")
    return settings, search, batch_size


def _run_chunks(st, chunks, solve_chunk, provenance, workers, bar, finished, release_memory) -> None:
    """Solve the chunks, ``workers`` at a time (threads), appending each chunk's rows to the store
    ``st`` as soon as it finishes, in any order: a long pair neither idles the other workers nor holds
    back finished rows (which an interrupt would lose)."""

    def write(solved):
        rows = []
        for inst, sol in solved:
            arrays = {"W": sol.W} | ({"H": sol.H} if getattr(sol, "H", None) is not None else {})
            rows.append(_row(inst, sol, st.save_config(inst.stem(), arrays), provenance))
        st.append(rows)
        return len(rows)

    pool = ThreadPoolExecutor(workers, thread_name_prefix="gnc-sweep")
    pending = set()

    def write_first_done():
        nonlocal pending, finished
        done, pending = _first_done(pending)
        for future in done:
            finished += write(future.result())
        bar.update(finished)
        if release_memory:  # a long sweep compiles a program per pair (gnc_jax._src.process)
            release_compiled_programs()

    bar.update(finished)
    try:
        for chunk in chunks:
            pending.add(pool.submit(solve_chunk, chunk))
            if len(pending) == workers:
                write_first_done()
        while pending:
            write_first_done()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _neighbour_pass(st, mine, seed: int, solver, search, settings_json: str, progress) -> int:
    """:func:`gnc_jax._src.neighbours.neighbour_pass` over the Tammes pairs ``mine`` and the store
    ``st``'s best Tammes codes: each pair raised is solved with the sweep's seed and settings, its row
    appended (its settings name the start). Candidates below the pair's code change nothing, so a
    rerun solves only what an interruption left. Returns how many pairs the pass raised."""
    insts = {(i.d, i.K): i for i in mine}

    def best(d, K):
        rows = store.best([r for r in st.rows if r["problem"] == "tammes" and (r["d"], r["K"]) == (d, K)])
        return (rows[0]["min_angle_deg"], store.load_config(st.path, rows[0])["W"]) if rows else None

    def solve(d, K, Z, angles):
        inst = insts[d, K]
        (sol,) = batch.solve_pairs(
            "tammes", [(d, K)], seed=seed, solver=solver, search=search, initial={(d, K): list(Z)}
        )
        started = json.loads(settings_json) | {"initial": f"neighbour codes, best {angles[0]:.9f} deg"}
        provenance = row_provenance(seed, json.dumps(started, sort_keys=True))
        st.append([_row(inst, sol, st.save_config(st.unused_stem(inst.stem()), {"W": sol.W}), provenance)])
        return sol.summary()["min_angle_deg"]

    key = lambda d, K: jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), d), K)
    return neighbour_pass(insts, best, solve, key, progress)


def sweep(
    problem: str,
    ds,
    Ks,
    *,
    out,
    ns=None,
    taus=None,
    weight_decay: float = 0.0,
    seed: int = 0,
    batch_size: int | None = None,
    workers: int = 2,
    process_index: int = 0,
    process_count: int = 1,
    progress=sys.stderr,
    release_memory: bool = False,
    solver: SolverSettings | UFMSettings | None = None,
    search: SearchSettings | None = None,
    neighbours: bool = False,
) -> SweepReport:
    """Solve every instance of the grid not yet in the store ``out`` and append its row.

    Args:
      problem: 'tammes', 'softmax-code', 'hardmax' (``ns``) or 'ufm' (``ns``, ``taus``,
        ``weight_decay``).
      ds: dimensions, integers >= 2.
      Ks: numbers of points, integers >= 2.
      out: the store's path (CSV); configurations go to ``<stem>_configs/`` beside it.
      seed: an int; with the settings it fixes every answer. Resuming with other settings (seed,
        weight decay or solver settings) than the rows of this problem already in the store is
        refused (:class:`gnc_jax._src.store.StoreError`).
      batch_size: instances per solver call (and per append); None: :func:`default_batch_size`, at
        least the search's ``stack`` (pairs searched together must be in one call).
      workers: batches solved at once (threads); 1 solves them one after the other. The answers do
        not depend on it.
      process_index: this process's index: it solves every process_count-th instance and writes its
        own shard of the store (see the module docstring).
      process_count: the number of processes sharing the grid.
      progress: a file for the progress lines (None: silent).
      release_memory: drop JAX's compilation caches after a finished batch when the process's memory
        maps near the kernel's limit (as :func:`gnc_jax.solve_pairs`); ``gnc-jax sweep`` asks.
      solver: :class:`SolverSettings`, or :class:`UFMSettings` for ufm (defaults if None).
      search: :class:`SearchSettings` of the arrangement problems' global search (defaults if None).
      neighbours: tammes only: after the grid, solve again each pair whose code is below a finished
        code made from its neighbours' (the code of K - 1 plus a point, of K + 1 less a point;
        :func:`_neighbour_pass`; a pair raised sends its neighbours back to be screened). It reads
        this process's store only.

    Returns:
      A ``SweepReport``: the store's path, the instances of this process's share, how many were
      already in the store and how many this call solved, the wall time and how many pairs the
      neighbour pass raised.
    """
    # Long because its Args document every keyword; the body is the store's resume logic.
    instances = grid(problem, ds, Ks, ns, taus)
    settings, search, batch_size = _check_sweep(
        problem, seed, batch_size, workers, process_index, process_count, weight_decay, solver, search
    )
    release_memory = runner.flag("release_memory", release_memory)
    if runner.flag("neighbours", neighbours) and problem != "tammes":
        raise InvalidArgument(f"neighbours applies only to the tammes problem, not {problem}")
    searched = {"search": dataclasses.asdict(search)} if search is not None else {}
    settings_json = json.dumps(
        {"seed": int(seed), "weight_decay": float(weight_decay)} | dataclasses.asdict(settings) | searched,
        sort_keys=True,
    )
    # Sorted by bucket so that a batch is one or two compiled calls; every host takes a stride.
    instances.sort(key=lambda i: (runner.bucket_size(i.d), runner.bucket_size(i.K, minimum=8), i))
    mine = instances[process_index::process_count]
    path = shard_path(out, process_index, process_count)
    t0 = time.perf_counter()
    with store.ResultsStore(path) as st:
        conflict = store.settings_conflict(
            st.rows, problem, settings_json, _unbound_limits(settings, instances)
        )
        if conflict:
            raise store.StoreError(
                f"conflicting settings on resume of {problem} in {str(path)!r}: {conflict} "
                "(give the store's settings, or write to another store)"
            )
        done = st.finished()
        todo = [i for i in mine if store.row_key(i._asdict()) not in done]
        initial = _other_problems_codes(st, problem, search, todo)

        def solve_chunk(chunk):
            out = []
            for n in sorted({i.n or 0 for i in chunk}):  # hardmax: one call per n
                part = [i for i in chunk if (i.n or 0) == n]
                out += zip(part, _solve(part, seed, settings, weight_decay, search, initial))
            return out

        chunks = [todo[i : i + batch_size] for i in range(0, len(todo), batch_size)]
        provenance = row_provenance(seed, settings_json)
        bar = Progress(len(mine), len(mine) - len(todo), progress)
        _run_chunks(st, chunks, solve_chunk, provenance, workers, bar, len(mine) - len(todo), release_memory)
        improved = (
            _neighbour_pass(st, mine, seed, settings, search, settings_json, progress) if neighbours else 0
        )
    wall = time.perf_counter() - t0
    return SweepReport(path, len(mine), len(mine) - len(todo), len(todo), wall, improved)
