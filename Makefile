# Two commands for a new user: `make run` and `make test`. Both set everything up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EGTB_DIR ?= data/egtb
PIECES ?= 5
JOBS ?=

.PHONY: run test test-slow test-all bench tables demo setup clean

# This machine's environment sets PYTHONDONTWRITEBYTECODE=1 (CI's may too): no Python process
# then keeps the bytecode it compiles, and each one (a pytest-xdist worker, an engine, a Dask worker,
# a build worker) compiles numba, numpy and the rest from source again: `import numba` took 1.5 CPU s
# instead of 0.45. The commands here let Python write __pycache__ (in the venv and in this checkout,
# git-ignored), so that a module is compiled once.
unexport PYTHONDONTWRITEBYTECODE

setup: $(STAMP)

# The venv is made without pip where $(PYTHON)'s own pip can install into another environment
# (pip >= 22.3, --python): that skips ensurepip. That pip installs uv into the venv, and uv installs
# the project: 2.8 s + 2.5 s here, against 16-18 s for pip installing the project (a fresh clone's
# set-up, before any test). Where uv does not install (no wheel for the platform), pip installs the
# project, as before. No byte-compiling at install (uv's default, pip's --no-compile): a module is
# compiled when first imported. Add a package with `.venv/bin/uv pip install NAME`.
PIP_FLAGS := --quiet --no-compile --disable-pip-version-check
PROJECT := -e '.[test,distributed,web]'
$(STAMP): pyproject.toml
	@if $(PYTHON) -m pip --help 2>/dev/null | grep -q -- "--python <python>"; then \
		pip="$(PYTHON) -m pip --python $(BIN)/python"; venv_flags=--without-pip; \
	else \
		pip="$(BIN)/python -m pip"; venv_flags=; \
	fi; \
	echo "$(PYTHON) -m venv $$venv_flags $(VENV)"; $(PYTHON) -m venv $$venv_flags $(VENV) || exit 1; \
	echo "$$pip install uv"; \
	if $$pip install $(PIP_FLAGS) uv; then \
		echo "$(BIN)/uv pip install --python $(BIN)/python $(PROJECT)"; \
		$(BIN)/uv pip install --quiet --python $(BIN)/python $(PROJECT) || exit 1; \
	else \
		echo "uv did not install: $$pip install $(PROJECT)"; $$pip install $(PIP_FLAGS) $(PROJECT) || exit 1; \
	fi
	touch $(STAMP)

## run: build the tables up to $(PIECES) pieces (skips complete ones), then a demo match
run: tables demo

tables: $(STAMP)
	$(BIN)/egtb build --pieces $(PIECES) --tables $(EGTB_DIR) $(if $(JOBS),--jobs $(JOBS))
	$(BIN)/egtb stats --tables $(EGTB_DIR)

demo: $(STAMP)
	$(BIN)/tournament run --engine medium --engine hard --openings 3-move --games 12 \
		--tc 0.05 --tables $(EGTB_DIR) --adjudicate-pieces $(PIECES) --out runs/demo

# The tests run in pytest-xdist workers, one more than the cores (TEST_WORKERS=0: in one process;
# many tests wait on engine processes, a browser or a lock, and the extra worker runs meanwhile:
# a fresh clone's `make test` on 2 cores took 156-173 s with 3 workers, 188 s with 2); a worker
# takes a whole test file (its module fixtures are made once), the longest files first
# (tests/conftest.py), the shared tables are built once.
TEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print(len(os.sched_getaffinity(0)) + 1 if hasattr(os, 'sched_getaffinity') else (os.cpu_count() or 1) + 1)")
PYTEST := $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

## test: the default suite (slow checks are marked and run by test-slow)
test: $(STAMP)
	$(PYTEST)

test-slow: $(STAMP)
	$(PYTEST) -m slow

## test-all: both in one pytest run (CI): the run's shared tables are built once
test-all: $(STAMP)
	$(PYTEST) -m "slow or not slow"

bench: $(STAMP)
	$(BIN)/python bench/bench_movegen.py
	$(BIN)/python bench/bench_build.py
	$(BIN)/python bench/bench_probe.py
	$(BIN)/python bench/bench_search.py
	$(BIN)/python bench/bench_tournament.py
	$(BIN)/python bench/bench_deadlines.py
	$(BIN)/python bench/bench_web.py --tables $(EGTB_DIR)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
