"""The public API: a small set of names, each on the documentation site, and every docstring example
run as a doctest."""

import doctest
import inspect
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


NAMESPACES = ("gnc_jax", "gnc_jax.metrics", "gnc_jax.theory", "gnc_jax.store", "gnc_jax.plots", "gnc_jax.nn")
NAMESPACES += ("gnc_jax.related",)


def docstring_gaps(obj) -> list[str]:
    """What a public function's or class's docstring lacks: a summary, Args (if it takes any),
    Returns (if it returns something), Attributes or Args (a class)."""
    doc = inspect.getdoc(obj) or ""
    if not doc.strip():
        return ["no docstring"]
    gaps = []
    if inspect.isclass(obj):
        if not issubclass(obj, Exception) and not re.search(r"^(Attributes|Args):$", doc, re.M):
            gaps.append("no Attributes or Args")
    elif inspect.isfunction(obj):
        sig = inspect.signature(obj)
        if sig.parameters and "Args:" not in doc:
            gaps.append("no Args")
        if sig.return_annotation not in (None, "None") and "Returns:" not in doc:
            gaps.append("no Returns")
    return gaps


def test_every_public_function_and_class_documents_its_arguments_and_result():
    gaps = {}
    for name in NAMESPACES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and docstring_gaps(obj):
                gaps[f"{name}.{attr}"] = docstring_gaps(obj)
    assert not gaps, gaps


def test_the_docstring_check_can_fail():
    def bare(x):
        """Only a summary."""
        return x

    def documented(x: int) -> int:
        """Twice x.

        Args:
          x: a number.

        Returns:
          2 x.
        """
        return 2 * x

    assert docstring_gaps(bare) == ["no Args", "no Returns"]
    assert docstring_gaps(documented) == []
