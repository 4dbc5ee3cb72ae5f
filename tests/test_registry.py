"""The problem registry: every family's record is what its solver, the CLI and the store use."""

import dataclasses

import numpy as np
import pytest

from gnc_jax._src import registry, store, sweep
from gnc_jax._src.cli import build_parser
from gnc_jax._src.errors import InvalidArgument

# One tiny instance per family, solved through the registry's own solve function.
ANNEAL = dict(restarts=2, steps=50, hop_rounds=0, polish_steps=10)
TINY = {  # (instance, solver settings)
    "tammes": (dict(d=2, K=3), ANNEAL),
    "softmax-code": (dict(d=2, K=3), ANNEAL),
    "hardmax": (dict(d=2, K=3, n=1), ANNEAL),
    "ufm": (dict(d=2, K=3, n=1, tau=0.5), dict(restarts=2, steps=1000, hold_steps=1000)),
    "ufm-imbalanced": (
        dict(counts=[3, 2], d=2, lambda_w=0.01, lambda_h=0.01),
        dict(restarts=2, steps=2000, hold_steps=1000),
    ),
}


def _exact_score(name):
    """Each TINY instance's optimal score, from geometry alone (d = 2, K = 3: the equilateral triangle,
    which every family's optimum is for K <= d + 1)."""
    if name == "tammes":
        return 120.0
    if name in ("softmax-code", "hardmax"):
        return 1.5  # distance from a vertex to the opposite side's midpoint: 1 + cos 60 deg
    if name == "ufm":  # h = w_k: the logits are 1/tau (own class) and -1/(2 tau) (the other two)
        return float(np.log1p(2 * np.exp(-1.5 / 0.5)))
    from gnc_jax.related.imbalanced import predict_imbalanced

    return predict_imbalanced([3, 2], 0.01, 0.01, d=2).lower_bound  # tested by brute force elsewhere


@pytest.mark.parametrize(
    "family",
    [
        pytest.param(f, marks=[pytest.mark.slow] if f.name.startswith("ufm") else [])
        for f in registry.FAMILIES
    ],
    ids=lambda f: f.name,
)
def test_each_family_solves_and_its_solution_carries_its_exact_score(family):
    instance, fields = TINY[family.name]
    settings = family.settings_type()(**fields)
    assert dataclasses.is_dataclass(settings)
    solution = family.solver()(**instance, solver=settings, seed=0)
    value = getattr(solution, family.score)
    assert isinstance(value, float)
    assert value == pytest.approx(_exact_score(family.name), abs=1e-9), (family.name, value)


def test_the_cli_the_sweep_and_the_store_take_their_problems_from_the_registry():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices
    choices = lambda cmd: next(tuple(a.choices) for a in sub[cmd]._actions if a.dest == "problem")
    assert choices("solve") == registry.NAMES and choices("sweep") == choices("table") == registry.STORED
    assert sweep.PROBLEMS == registry.STORED == tuple(store.SCORE)
    for f in registry.FAMILIES:
        if f.stored:
            assert store.SCORE[f.name] == (f.score, f.larger_is_better)
    # The search's settings go to the families solve_pairs solves, as the CLI and the sweep give them.
    assert [f.name for f in registry.FAMILIES if f.takes_search] == ["tammes", "softmax-code", "hardmax"]


def test_check_options_names_what_does_not_apply_and_what_is_missing():
    registry.check_options("ufm", ["tau", "n", "weight_decay"])
    with pytest.raises(InvalidArgument, match=r"^n does not apply to tammes \(n applies to hardmax, ufm\)$"):
        registry.check_options("tammes", ["n"])
    with pytest.raises(InvalidArgument, match="--tau, --counts do not apply to hardmax"):
        registry.check_options("hardmax", ["tau", "counts"], spell=lambda o: "--" + o)
    with pytest.raises(InvalidArgument, match="^ufm needs tau$"):
        registry.check_options("ufm", ["n"])
    with pytest.raises(InvalidArgument, match="problem must be one of"):
        registry.family("packing")
