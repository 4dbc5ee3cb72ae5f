# The README's two commands: `make demo` and `make test`, on a machine with only python3 and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-all docs check-claims bench lint clean

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

# The fast tier (the README's test command): every module's tests but those marked slow, with XLA's
# -O0 backend (compiles faster), each test file on one worker (its compiled programs and module fixtures
# are made once, not once per worker: docs/decisions.md). `make test-all` runs the full suite (CI).
TIER ?= -m "not slow"
TIER_XLA ?= --xla_backend_optimization_level=0
DIST ?= loadfile
test: $(VENV)/.test
	$(if $(strip $(TIER_XLA) $(XLA_FLAGS)),XLA_FLAGS="$(strip $(TIER_XLA) $(XLA_FLAGS))") \
	  $(BIN)/python -m pytest -n 2 --dist $(DIST) --durations=15 $(TIER) tests

# The full suite: every test, notebooks included, also with XLA's -O0 backend (about 20% faster; a test
# checks that both levels certify the same codes); its tests go to whichever worker is free (a few files
# hold minutes of tests each).
test-all:
	$(MAKE) test TIER= DIST=load

# The documentation site (MkDocs Material + mkdocstrings + mkdocs-jupyter) into site/; warnings are errors.
docs: $(VENV)/.docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The README's headline numbers against the committed outputs they quote.
check-claims: $(VENV)/.test
	$(BIN)/python benchmarks/check_claims.py

bench: $(VENV)/.bench
	$(BIN)/python benchmarks/bench_solvers.py
	$(BIN)/python benchmarks/bench_solvers.py --host-devices 2

lint: $(VENV)/.test
	$(BIN)/python -m pip install --quiet ruff
	$(BIN)/ruff check gnc_jax tests benchmarks
	$(BIN)/ruff format --check gnc_jax tests benchmarks

clean:
	rm -rf $(VENV) demo_out .jax_cache site
