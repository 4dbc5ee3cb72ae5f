"""The one batched runner every solver family uses: validation of the grid's values, keys, size
buckets, padding, devices, timing and scatter back.

A family (the max-min problems in :mod:`gnc_jax._src.batch`, the UFM in :mod:`gnc_jax._src.ufm`, the
imbalanced UFM in :mod:`gnc_jax.related.imbalanced`) supplies the bucket of each instance, how to solve
a bucket (one compiled call over its padded members, plus whatever runs on the host) and how to finish
each member's solution; :func:`run_buckets` does the rest. Instance keys are derived from the instance
alone (:func:`instance_key`), so a result does not depend on what else is in the batch.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Sequence

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from gnc_jax._src.errors import InvalidArgument

# Bucket sizes: 2, 3, 4, 6, 8, 12, ... (at most 50% padding per axis), 25% steps from 1024 on.
_SIZES = sorted(
    {2, 3}
    | {2**i for i in range(2, 21)}
    | {3 * 2**i for i in range(1, 20)}
    | {f * 2**i for f in (5, 7) for i in range(8, 19)}  # from 1024 on: steps of 25% at most
)


def bucket_size(n: int, minimum: int = 2) -> int:
    """Smallest size in 2, 3, 4, 6, 8, 12, 16, 24, ... that is >= max(n, minimum)."""
    for s in _SIZES:
        if s >= max(n, minimum):
            return s
    raise InvalidArgument(f"size {n} is too large")


def over_slots(f: Callable) -> Callable:
    """``f`` over a leading axis of slots, called as ``(active, *args)`` with ``active`` (slots,) bool:
    on an accelerator all slots at once (``jax.vmap``); on a CPU one after another (``lax.map``),
    the inactive ones skipped (their outputs zeros), since there a batch of all streams out of the
    cache and an inactive slot would cost what an active one does. Either way a slot's result
    depends on its own arguments and the shapes, not on the other slots."""

    def run(active, *args):
        if jax.default_backend() != "cpu":
            return jax.vmap(f)(*args)

        def one(xs):
            on, *a = xs
            out = jax.eval_shape(f, *a)
            zeros = lambda a: jax.tree_util.tree_map(lambda s: jax.numpy.zeros(s.shape, s.dtype), out)
            return jax.lax.cond(on, lambda a: f(*a), zeros, a)

        return jax.lax.map(one, (active, *args))

    return run


def padded_count(n: int) -> int:
    """The members of a bucket rounded up to a power of two (one compilation serves 2^j of them)."""
    return 1 << max(0, math.ceil(math.log2(n)))


def positive_ints(name: str, values, minimum: int = 2) -> list[int]:
    """An integer or a sequence of integers, each >= ``minimum``, as a list (errors name ``name``)."""
    vals = [values] if isinstance(values, (int, np.integer)) else values
    try:
        vals = list(vals)
    except TypeError:
        raise InvalidArgument(
            f"{name} must be an integer or a sequence of integers, got {values!r}"
        ) from None
    if not vals:
        raise InvalidArgument(f"{name} is empty")
    out = []
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise InvalidArgument(f"{name} must hold integers, got {v!r}")
        if v < minimum:
            raise InvalidArgument(f"{name} must be >= {minimum}, got {v}")
        out.append(int(v))
    return out


def positive_floats(name: str, values, allow_zero: bool = False) -> list[float]:
    """A number or a sequence of numbers, each finite and > 0 (>= 0 with ``allow_zero``), as a list."""
    vals = (
        [values] if isinstance(values, (int, float, np.number)) and not isinstance(values, bool) else values
    )
    try:
        vals = [float(v) for v in vals]
    except (TypeError, ValueError):
        raise InvalidArgument(f"{name} must be a number or a sequence of numbers, got {values!r}") from None
    if not vals:
        raise InvalidArgument(f"{name} is empty")
    for v in vals:
        if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
            raise InvalidArgument(f"{name} must be finite and {'>=' if allow_zero else '>'} 0, got {v}")
    return vals


def time_limit_seconds(value) -> float | None:
    """``time_limit`` validated: None (no limit) or a finite number of seconds > 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not value > 0:
        raise InvalidArgument(f"time_limit must be a number of seconds > 0, got {value!r}")
    if not math.isfinite(value):
        raise InvalidArgument(f"time_limit must be finite, got {value!r}")
    return float(value)


def flag(name: str, value) -> bool:
    """A True/False argument, validated (1, "yes" and the like are refused by name)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgument(f"{name} must be True or False, got {value!r}")
    return bool(value)


def resolve_key(key, seed) -> jax.Array:
    """The PRNG key from exactly one of ``key`` (a jax.random key) and ``seed`` (an int >= 0)."""
    if (key is None) == (seed is None):
        raise InvalidArgument("give exactly one of key (a jax.random key) or seed (an int)")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise InvalidArgument(f"seed must be an integer >= 0, got {seed!r}")
        key = jax.random.key(int(seed))
    return key


def instance_key(key: jax.Array, *values) -> jax.Array:
    """The key of one instance: ``key`` with every value folded in (an integer as it is, a float as
    the two 32-bit words of its float64), so it depends on the instance alone."""
    for v in values:
        if isinstance(v, (int, np.integer)):
            key = jax.random.fold_in(key, int(v))
        else:
            for word in np.array([v], np.float64).view(np.uint32).tolist():
                key = jax.random.fold_in(key, word)
    return key


def device_count() -> int:
    """Devices of this process (under ``jax.distributed`` every host solves its own instances)."""
    return jax.local_device_count()


def round_to_devices(restarts: int, n_dev: int) -> int:
    """``restarts`` rounded up to a multiple of the device count (the restart axis is sharded)."""
    return -(-restarts // n_dev) * n_dev


def device_mesh() -> Mesh:
    """A 1-D mesh over this process's devices, axis name 'restarts'."""
    return Mesh(np.array(jax.local_devices()), ("restarts",))


def restart_constraint(n_dev: int):
    """A function placing a population (leading axis = restarts) on the device mesh (identity on one
    device)."""
    if n_dev == 1:
        return lambda tree: tree
    sharding = NamedSharding(device_mesh(), P("restarts"))
    return lambda tree: jax.lax.with_sharding_constraint(tree, sharding)


def run_buckets(
    n_items: int,
    bucket_of: Callable[[int], Hashable],
    solve: Callable[[Hashable, list[int], list[int]], object],
    finish: Callable[[Hashable, list[int], object, float], Sequence],
    progress=None,
    label: str = "solve",
) -> list:
    """Solve ``n_items`` instances bucket by bucket and scatter the results back into input order.

    ``bucket_of(i)`` is instance i's bucket (sortable); ``solve(bucket, members, padded)`` solves a
    bucket, where ``padded`` is ``members`` padded to :func:`padded_count` with copies of the first
    (the compiled call's batch); ``finish(bucket, members, raw, wall_s)`` turns its output into one
    result per member, given the bucket's wall time per member (compilation included). With a text
    stream ``progress``, a line after each bucket: buckets and instances done, elapsed time and an
    ETA (from the instances done so far)."""
    buckets: dict[Hashable, list[int]] = {}
    for i in range(n_items):
        buckets.setdefault(bucket_of(i), []).append(i)
    out: list = [None] * n_items
    start, done = time.perf_counter(), 0
    for b, (bucket, members) in enumerate(sorted(buckets.items()), 1):
        padded = members + [members[0]] * (padded_count(len(members)) - len(members))
        t0 = time.perf_counter()
        raw = solve(bucket, members, padded)
        wall = (time.perf_counter() - t0) / len(members)
        for i, result in zip(members, finish(bucket, members, raw, wall), strict=True):
            out[i] = result
        done += len(members)
        if progress is not None:
            elapsed = time.perf_counter() - start
            print(
                f"{label}: bucket {b}/{len(buckets)}, {done}/{n_items} instances, {elapsed:.1f} s, "
                f"ETA {elapsed / done * (n_items - done):.0f} s",
                file=progress,
                flush=True,
            )
    return out
