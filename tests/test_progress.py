"""Progress inside one compiled solve: steps reported from compiled code, the same numbers either way."""

import io
import re

import numpy as np
import pytest

import gnc_jax
from gnc_jax import SearchSettings, SolverSettings, UFMSettings
from gnc_jax._src import progress

LINE = re.compile(r"^(solve \w+ \(.*\)): (\d+)/(\d+) steps, \d+ s, ETA (\d+ s|\?)$")


def _step_lines(text):
    """(label, position, total) of every step line in ``text``."""
    return [(m[1], int(m[2]), int(m[3])) for m in map(LINE.match, text.splitlines()) if m]


@pytest.fixture
def every_report(monkeypatch):
    """A meter that prints every report (the default waits 10 s between lines)."""
    monkeypatch.setattr(progress.StepMeter, "interval", 0.0)


@pytest.mark.slow
def test_max_min_solve_reports_each_position_once_and_computes_the_same(every_report, monkeypatch):
    from gnc_jax._src import batch

    kw = dict(
        seed=0,
        solver=SolverSettings(
            restarts=4, steps=100, hop_rounds=2, hop_steps=50, polish_steps=50, lp_polish_iters=0
        ),
        search=SearchSettings(rounds=0),
    )
    pairs = [(3, 7), (3, 8)]  # one bucket: two pairs, four restarts each, one report per step
    quiet = gnc_jax.solve_pairs("tammes", pairs, **kw)
    out = io.StringIO()
    monkeypatch.setattr(batch, "_LAST_ANNEAL", [])  # run the anneal again, not a copy of the last one
    loud = gnc_jax.solve_pairs("tammes", pairs, progress=out, **kw)
    for a, b in zip(quiet, loud):
        np.testing.assert_array_equal(a.W, b.W)
    lines = _step_lines(out.getvalue())
    total = 100 + 2 * 50 + 50
    assert [p for _, p, _ in lines] == list(range(progress.EVERY, total + 1, progress.EVERY))
    assert {(label, t) for label, _, t in lines} == {("solve tammes (d <= 3, K <= 8, 2 pair(s))", total)}
    assert "solve tammes: bucket 1/1, 2/2 instances" in out.getvalue()


@pytest.mark.slow
def test_ufm_solve_reports_its_steps_and_computes_the_same(every_report):
    kw = dict(seed=1, solver=UFMSettings(restarts=2, steps=60, hold_steps=40))
    quiet = gnc_jax.solve_ufm(3, 4, 2, 0.5, **kw)
    out = io.StringIO()
    loud = gnc_jax.solve_ufm(3, 4, 2, 0.5, progress=out, **kw)
    np.testing.assert_array_equal(quiet.W, loud.W)
    assert [p for _, p, _ in _step_lines(out.getvalue())] == [25, 50, 75, 100]


def test_meter_estimates_the_time_left_from_the_rate_after_the_first_report(monkeypatch):
    clock = iter([0.0, 5.0, 7.0, 9.0])  # opened at 0; reports at 5 (compiled by then), 7 and 9
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(progress.StepMeter, "interval", 3.0)
    out = io.StringIO()
    with progress.step_meter(out, "solve x", 1000) as meter:
        for position in (100, 300, 500):
            progress._receive(np.int64(position))
    assert meter.position == 500
    # 5 s after opening: no rate yet; 7 s: under 3 s since the last line; 9 s: 400 steps in 4 s
    assert out.getvalue().splitlines() == [
        "solve x: 100/1000 steps, 5 s, ETA ?",
        "solve x: 500/1000 steps, 9 s, ETA 5 s",
    ]
    assert not progress._open
