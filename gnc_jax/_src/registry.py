"""The problem registry: one record per solver family.

The CLI's choices and its checks of which options apply, the sweep's grid, and the results store's
rule for the best row all derive from these records. Adding a problem is one :class:`Family` here
plus its objective (:mod:`gnc_jax._src.objectives`) and its solve function.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Iterable

from gnc_jax._src.errors import InvalidArgument

# The global search's settings the CLI takes (gnc_jax._src.search.SearchSettings, as search_<field>),
# and with time_limit the options of the Tammes and softmax-code families only.
SEARCH_SETTINGS = (
    "search_rounds",
    "search_population",
    "search_work_per_member",
    "search_stack",
    "search_rotate_share",
)
SEARCH_OPTIONS = ("time_limit", *SEARCH_SETTINGS)


@dataclasses.dataclass(frozen=True)
class Family:
    """One solver family.

    Attributes:
      name: the name in the CLI, the store and :func:`gnc_jax.solve`.
      summary: what it solves, with the paper's equation.
      score: the solution field (and store column) that ranks results.
      larger_is_better: whether a larger ``score`` is better.
      options: the axes and options that apply besides d and K (``n``, ``tau``, ``weight_decay``,
        ``counts``, ``lambda_w``, ``lambda_h``, ``hop_rounds``, the search options).
      solve: the solve function, as 'module:name' (imported when asked for: :meth:`solver`).
      settings: its settings dataclass, as 'module:name' (:meth:`settings_type`).
      required: those of ``options`` that must be given.
      stored: sweeps and the results store hold it.
    """

    name: str
    summary: str
    score: str
    larger_is_better: bool
    options: frozenset[str]
    solve: str
    settings: str
    required: tuple[str, ...] = ()
    stored: bool = True

    def solver(self) -> Callable:
        """The solve function (imported on first use, so the CLI starts without JAX)."""
        return _load(self.solve)

    def settings_type(self) -> type:
        return _load(self.settings)

    @property
    def takes_search(self) -> bool:
        """Whether its solve takes the global search's settings (``search=``): the families solved
        by :func:`gnc_jax.solve_pairs`, whose settings are ``SolverSettings``."""
        return self.settings == _SOLVER


def _load(path: str):
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


_SOLVER = "gnc_jax._src.driver:SolverSettings"


FAMILIES = (
    Family(
        "tammes",
        "Tammes codes: maximise the minimum pairwise angle (eq. 11)",
        "min_angle_deg",
        True,
        frozenset({"hop_rounds", *SEARCH_OPTIONS}),
        "gnc_jax._src.batch:solve_tammes",
        _SOLVER,
    ),
    Family(
        "softmax-code",
        "softmax codes: maximise the minimum one-vs-rest distance (eq. 3)",
        "rho_one_vs_rest",
        True,
        frozenset({"hop_rounds", *SEARCH_OPTIONS}),
        "gnc_jax._src.batch:solve_softmax_code",
        _SOLVER,
    ),
    Family(
        "hardmax",
        "the HardMax problem with n features per class (eq. 5)",
        "rho_one_vs_rest",
        True,
        frozenset({"hop_rounds", "n"}),
        "gnc_jax._src.batch:solve_hardmax",
        _SOLVER,
    ),
    Family(
        "ufm",
        "the UFM with temperature-scaled CE (eq. 2), or with weight decay (B.1)",
        "loss",
        False,
        frozenset({"n", "tau", "weight_decay"}),
        "gnc_jax._src.ufm:solve_ufm",
        "gnc_jax._src.ufm:UFMSettings",
        required=("tau",),
    ),
    Family(
        "ufm-imbalanced",
        "the imbalanced UFM with non-negative features (paper 002, problem 4)",
        "loss",
        False,
        frozenset({"counts", "lambda_w", "lambda_h"}),
        "gnc_jax.related.imbalanced:solve_ufm_imbalanced",
        "gnc_jax.related.imbalanced:ImbalancedSettings",
        required=("counts", "lambda_w", "lambda_h"),
        stored=False,
    ),
)
NAMES = tuple(f.name for f in FAMILIES)
STORED = tuple(f.name for f in FAMILIES if f.stored)


def family(name: str) -> Family:
    """The family called ``name`` (:class:`~gnc_jax._src.errors.InvalidArgument` naming 'problem' if none)."""
    for f in FAMILIES:
        if f.name == name:
            return f
    raise InvalidArgument(f"problem must be one of {NAMES}, got {name!r}")


def check_options(name: str, given: Iterable[str], spell: Callable[[str], str] = str) -> None:
    """Raise :class:`~gnc_jax._src.errors.InvalidArgument` if an option in ``given`` does not apply to the
    family ``name`` or a required one is missing; ``spell`` writes an option as the caller knows it
    (e.g. ``--weight-decay`` in the CLI)."""
    f = family(name)
    given = list(dict.fromkeys(given))
    foreign = [o for o in given if o not in f.options]
    if foreign:
        where = [g.name for g in FAMILIES if foreign[0] in g.options]
        raise InvalidArgument(
            f"{', '.join(map(spell, foreign))} {'does' if len(foreign) == 1 else 'do'} not apply to {name}"
            + (f" ({spell(foreign[0])} applies to {', '.join(where)})" if where else "")
        )
    missing = [o for o in f.required if o not in given]
    if missing:
        raise InvalidArgument(f"{name} needs {', '.join(map(spell, missing))}")
