# The README's two commands: `make demo` and `make test`, on a machine with only python3 and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test docs bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.demo: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[demo]'
	touch $@

$(VENV)/.test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,demo]'
	touch $@

$(VENV)/.docs: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $@

$(VENV)/.bench: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,demo,bench]'
	touch $@

demo: $(VENV)/.demo
	$(BIN)/gnc-jax demo --out demo_out

test: $(VENV)/.test
	$(BIN)/python -m pytest -n 2 --durations=15 tests

# The documentation site (MkDocs Material + mkdocstrings + mkdocs-jupyter) into site/; warnings are errors.
docs: $(VENV)/.docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

bench: $(VENV)/.bench
	$(BIN)/python benchmarks/bench_solvers.py
	$(BIN)/python benchmarks/bench_solvers.py --host-devices 2

lint: $(VENV)/.test
	$(BIN)/python -m pip install --quiet ruff
	$(BIN)/ruff check gnc_jax tests benchmarks
	$(BIN)/ruff format --check gnc_jax tests benchmarks

clean:
	rm -rf $(VENV) demo_out .jax_cache site
