"""Progress inside one compiled call: a line with the steps done and an ETA while a long solve runs.

A compiled solve cannot print as it goes, so its scans report their position (steps done of the whole
schedule) through ``jax.debug.callback`` every :data:`EVERY` steps (:func:`report_steps`); only
programs compiled for progress contain the callback, and it changes no value they compute. On the
host, the :class:`StepMeter` opened around the call (:func:`step_meter`) turns the positions into a
line on its stream at most every :attr:`StepMeter.interval` seconds: steps done of the total, time
since the call began (compilation included) and the ETA at the rate measured since the first report.
One metered call at a time: the callback goes to the meter opened last.
"""

from __future__ import annotations

import contextlib
import time

import jax
import numpy as np

EVERY = 25  # steps between reports from compiled code

_open: list[StepMeter] = []


class StepMeter:
    """Host side of :func:`report_steps`: the largest position reported (several devices may report
    the same one) and a rate-limited line on ``stream``."""

    interval = 10.0  # seconds between lines (the first comes ``interval`` s after the call began)

    def __init__(self, stream, label: str, total: int):
        self.stream, self.label, self.total = stream, label, total
        self.position = 0
        self.start = self.last_line = time.perf_counter()
        self.first = None  # (time, position) of the first report: the rate excludes compilation

    def update(self, position: int) -> None:
        now = time.perf_counter()
        if self.first is None:
            self.first = (now, position)
        self.position = max(self.position, position)
        if now - self.last_line < self.interval:
            return
        self.last_line = now
        t0, p0 = self.first
        rate = (self.position - p0) / (now - t0) if now > t0 and self.position > p0 else 0.0
        eta = f"ETA {(self.total - self.position) / rate:.0f} s" if rate else "ETA ?"
        print(
            f"{self.label}: {self.position}/{self.total} steps, {now - self.start:.0f} s, {eta}",
            file=self.stream,
            flush=True,
        )


@contextlib.contextmanager
def step_meter(stream, label: str, total: int):
    """Open a :class:`StepMeter` for the compiled call inside the ``with`` block (nothing if
    ``stream`` is None)."""
    if stream is None:
        yield None
        return
    meter = StepMeter(stream, label, total)
    _open.append(meter)
    try:
        yield meter
    finally:
        _open.remove(meter)


def _receive(position) -> None:
    if _open:
        _open[-1].update(int(np.asarray(position)))


def report_steps(position: jax.Array) -> None:
    """Inside compiled code: report ``position`` (steps done) to the open meter when it is a
    multiple of :data:`EVERY`."""
    jax.lax.cond(position % EVERY == 0, lambda p: jax.debug.callback(_receive, p), lambda p: None, position)
