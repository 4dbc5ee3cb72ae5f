"""The status vocabulary (gnc_jax/status.py)."""

import math

from gnc_jax._src.status import Status, from_residual


def test_from_residual_names_each_outcome():
    assert from_residual(1e-11, 1e-10) is Status.STATIONARY
    assert from_residual(1e-10, 1e-10) is Status.STATIONARY  # the tolerance itself passes
    assert from_residual(2e-10, 1e-10) is Status.MAX_STEPS
    assert from_residual(math.nan, 1e-10) is Status.NONFINITE
    assert from_residual(math.inf, 1e-10) is Status.NONFINITE


def test_statuses_print_as_their_lower_case_names():
    assert [str(s) for s in Status] == [
        "optimal",
        "stationary",
        "stalled",
        "max_steps",
        "nonfinite",
        "failed",
    ]
    assert f"{Status.MAX_STEPS}" == "max_steps" and Status("stalled") is Status.STALLED
