# The two commands: `make run` (zero-setup demo) and `make test` (the whole suite on real
# PostgreSQL and Redis). Everything installs itself; see README.md.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# `make run` needs the runtime packages only; tests and lint add the dev extras. Both install
# the exact versions and hashes of the lock files (requirements/, from `make lock`), then the
# project itself without resolving anything.
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
RUN_LOCK := requirements/run.txt
DEV_LOCK := requirements/dev.txt
PORT ?= 8000
# `make lock` only: uv in a virtualenv of its own (run and test never need it).
LOCK_VENV := .lock-venv
UV_VERSION := 0.13.9
UV := $(LOCK_VENV)/bin/uv
UV_COMPILE := $(UV) pip compile pyproject.toml --quiet --universal --python-version 3.11 \
	--generate-hashes --custom-compile-command "make lock" $(if $(UPGRADE),--upgrade)

# Checks written by others that the suite runs (axe-core now): npm packages at the exact
# versions of tests/external/package-lock.json, run with the machine's Node.
NODE_STAMP := tests/external/node_modules/.package-lock.json

.PHONY: run test lint test-deps install lock

$(RUN_STAMP): $(RUN_LOCK) pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes -r $(RUN_LOCK)
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(RUN_STAMP)

$(DEV_STAMP): $(RUN_STAMP) $(DEV_LOCK)
	$(BIN)/pip install --quiet --require-hashes -r $(DEV_LOCK)
	touch $(DEV_STAMP)

install: $(DEV_STAMP)

# The demo's public root follows PORT (seed_demo prints it, the OAuth issuer uses it).
run: export PORT := $(PORT)
run: export BASE_URL ?= http://127.0.0.1:$(PORT)
run: $(RUN_STAMP)
	bin/run-dev

# Regenerates the lock files from pyproject.toml's ranges, keeping every pin that still fits
# them; `make lock UPGRADE=1` moves every package to the newest version its range allows.
# The dev lock is constrained by the run lock: the packages both install are the same versions.
$(UV):
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install --quiet uv==$(UV_VERSION)

lock: $(UV)
	$(UV_COMPILE) -o $(RUN_LOCK)
	$(UV_COMPILE) --extra dev --constraint $(RUN_LOCK) -o $(DEV_LOCK)

# System packages the suite needs (PostgreSQL, Redis, Chromium), installed only when missing.
test-deps:
	bin/install-test-deps

# CI's run (.ci/run): lint, then the production checks (migrations match the models; Django's
# deploy checklist with the production settings), then the suite. The first failure stops it.
$(NODE_STAMP): tests/external/package.json tests/external/package-lock.json | test-deps
	npm ci --prefix tests/external --no-audit --no-fund --loglevel=error

test: $(DEV_STAMP) test-deps $(NODE_STAMP) lint
	bin/with-test-services bin/check-production
	bin/with-test-services $(BIN)/python -m pytest -n 3 --dist loadfile $(PYTEST_ARGS)

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
