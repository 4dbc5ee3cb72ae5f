"""The one batched runner: bucket sizes, padding, instance keys, scatter back."""

import io
import re

import jax
import numpy as np
import pytest

from gnc_jax._src import runner
from gnc_jax._src.errors import InvalidArgument


def test_bucket_sizes_are_the_documented_sequence_with_bounded_padding():
    assert [runner.bucket_size(n) for n in range(2, 25)] == (
        [2, 3, 4, 6, 6, 8, 8] + [12] * 4 + [16] * 4 + [24] * 8
    )
    for n in range(2, 5000):
        b = runner.bucket_size(n)
        assert n <= b <= (1.5 if n < 1024 else 1.25) * n
    assert runner.bucket_size(3, minimum=8) == 8


def test_padded_count_is_the_next_power_of_two():
    assert [runner.padded_count(n) for n in (1, 2, 3, 4, 5, 8, 9)] == [1, 2, 4, 4, 8, 8, 16]


def test_instance_keys_fold_integers_and_the_float64_words_of_floats():
    key = jax.random.key(3)
    expected = jax.random.fold_in(jax.random.fold_in(key, 5), 7)
    lo, hi = np.array([0.25]).view(np.uint32).tolist()
    expected = jax.random.fold_in(jax.random.fold_in(expected, lo), hi)
    got = runner.instance_key(key, 5, np.int64(7), 0.25)
    np.testing.assert_array_equal(jax.random.key_data(got), jax.random.key_data(expected))
    # an integer and the same value as a float are different instances
    assert not np.array_equal(
        jax.random.key_data(runner.instance_key(key, 1)), jax.random.key_data(runner.instance_key(key, 1.0))
    )


def test_run_buckets_pads_each_bucket_and_scatters_results_back_in_input_order():
    values = [5, 1, 4, 2, 3, 8, 6]
    calls = []

    def solve(bucket, members, padded):
        calls.append((bucket, members, padded))
        return [10 * values[i] for i in padded]

    def finish(bucket, members, raw, wall):
        assert wall >= 0
        return raw[: len(members)]

    out = runner.run_buckets(len(values), lambda i: values[i] % 2, solve, finish)
    assert out == [10 * v for v in values]
    assert [c[0] for c in calls] == [0, 1]  # buckets in sorted order
    for _, members, padded in calls:
        assert len(padded) == runner.padded_count(len(members)) and padded[: len(members)] == members
        assert set(padded[len(members) :]) <= {members[0]}


def test_run_buckets_reports_each_bucket_with_an_eta():
    stream = io.StringIO()
    runner.run_buckets(3, lambda i: i % 2, lambda b, m, p: m, lambda b, m, raw, w: raw, stream, "solve x")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("solve x: bucket 1/2, 2/3 instances")
    assert re.fullmatch(r"solve x: bucket 2/2, 3/3 instances, [0-9.]+ s, ETA 0 s", lines[1])


def test_run_buckets_refuses_a_finish_that_drops_members():
    with pytest.raises(ValueError):
        runner.run_buckets(2, lambda i: 0, lambda b, m, p: None, lambda b, m, raw, w: [1])


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: runner.positive_ints("d", 1), "d must be >= 2"),
        (lambda: runner.positive_ints("K", []), "K is empty"),
        (lambda: runner.positive_ints("n", 2.0), "n must be an integer"),
        (lambda: runner.positive_floats("tau", 0.0), "tau must be finite and > 0"),
        (lambda: runner.positive_floats("tau", float("nan")), "tau must be finite"),
        (lambda: runner.resolve_key(None, None), "exactly one of key"),
        (lambda: runner.resolve_key(None, -1), "seed must be an integer >= 0"),
    ],
)
def test_bad_values_name_the_argument(call, match):
    with pytest.raises(InvalidArgument, match=match):
        call()


def test_over_slots_runs_each_active_slot_as_alone_and_skips_the_others():
    # A slot's outputs are f of its own arguments, whatever the other slots hold or whether they are
    # active: the same bits as f called on that slot alone (on this CPU one slot after another), and
    # an inactive slot's outputs are zeros (skipped, not computed).
    def f(x, k):
        return jax.numpy.tanh(x @ x.T).sum(axis=1) * k, jax.numpy.linalg.norm(x)

    x = jax.random.normal(jax.random.key(0), (4, 5, 3))
    k = jax.numpy.arange(1.0, 5.0)
    run = jax.jit(runner.over_slots(f))
    out, norms = run(np.array([True, False, True, True]), x, k)
    for i in (0, 2, 3):
        alone = jax.jit(f)(x[i], k[i])
        np.testing.assert_array_equal(out[i], alone[0])
        assert norms[i] == alone[1]
    assert not np.any(out[1]) and norms[1] == 0
    other = x.at[0].set(0.0).at[3].set(7.0)  # slot 2 among other neighbours
    np.testing.assert_array_equal(run(np.array([True, True, True, False]), other, k)[0][2], out[2])
