"""The public API: a small set of names, each on the documentation site, and every docstring example
run as a doctest."""

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import gnc_jax

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_top_level_api_is_small_and_documented():
    # Solvers, their settings and results, the status enum and the certification functions; the
    # rest lives in the namespaces (theory, metrics, store, plots, nn, related) or in _src.
    assert len(gnc_jax.__all__) <= 25
    assert len(set(gnc_jax.__all__)) == len(gnc_jax.__all__)
    documented = set()
    for page in (DOCS / "api").glob("*.md"):
        documented |= set(re.findall(r"^::: gnc_jax\.(\w+)\s*$", page.read_text(), re.M))
    assert set(gnc_jax.__all__) <= documented, set(gnc_jax.__all__) - documented
    assert {name for name in documented if hasattr(gnc_jax, name)} >= set(gnc_jax.__all__)
    for namespace in ("theory", "metrics", "store", "plots"):
        assert namespace in documented or any(
            f"gnc_jax.{namespace}" in p.read_text() for p in (DOCS / "api").glob("*.md")
        )


# Modules whose examples run the solvers (seconds of compilation): the full tier only.
SOLVING = {"gnc_jax._src.batch"}


def modules():
    for info in pkgutil.walk_packages(gnc_jax.__path__, "gnc_jax."):
        if not info.name.endswith("__main__"):
            yield pytest.param(info.name, marks=[pytest.mark.slow] if info.name in SOLVING else [])


@pytest.mark.parametrize("name", list(modules()))
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
