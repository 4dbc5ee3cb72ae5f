"""The problem registry: every family's record is what its solver, the CLI and the store use."""

import dataclasses

import pytest

from gnc_jax._src import registry, store, sweep
from gnc_jax._src.cli import build_parser
from gnc_jax._src.errors import InvalidArgument

# One tiny instance per family, solved through the registry's own solve function.
TINY = {
    "tammes": dict(d=2, K=3, restarts=2, steps=50, hop_rounds=0, polish_steps=10),
    "softmax-code": dict(d=2, K=3, restarts=2, steps=50, hop_rounds=0, polish_steps=10),
    "hardmax": dict(d=2, K=3, n=1, restarts=2, steps=50, hop_rounds=0, polish_steps=10),
    "ufm": dict(d=2, K=3, n=1, tau=0.5, restarts=2, steps=50, hold_steps=10),
    "ufm-imbalanced": dict(
        counts=[3, 2], d=2, lambda_w=0.01, lambda_h=0.01, restarts=2, steps=50, hold_steps=10
    ),
}


@pytest.mark.parametrize("family", registry.FAMILIES, ids=lambda f: f.name)
def test_each_family_solves_and_its_solution_carries_its_score(family):
    settings = family.settings_type()
    assert dataclasses.is_dataclass(settings)
    solution = family.solver()(**TINY[family.name], seed=0)
    value = getattr(solution, family.score)
    assert isinstance(value, float) and value == value


def test_the_cli_the_sweep_and_the_store_take_their_problems_from_the_registry():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices
    choices = lambda cmd: next(tuple(a.choices) for a in sub[cmd]._actions if a.dest == "problem")
    assert choices("solve") == registry.NAMES and choices("sweep") == choices("table") == registry.STORED
    assert sweep.PROBLEMS == registry.STORED == tuple(store.SCORE)
    for f in registry.FAMILIES:
        if f.stored:
            assert store.SCORE[f.name] == (f.score, f.larger_is_better)


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
