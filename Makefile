# The two commands: `make run` (zero-setup demo) and `make test` (the whole suite on real
# PostgreSQL and Redis). Everything installs itself; see README.md.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# `make run` needs the runtime packages only; tests and lint add the dev extras.
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
PORT ?= 8000

.PHONY: run test lint test-deps install

$(RUN_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(RUN_STAMP)

$(DEV_STAMP): $(RUN_STAMP)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(DEV_STAMP)

install: $(DEV_STAMP)

# The demo's public root follows PORT (seed_demo prints it, the OAuth issuer uses it).
run: export PORT := $(PORT)
run: export BASE_URL ?= http://127.0.0.1:$(PORT)
run: $(RUN_STAMP)
	bin/run-dev

# System packages the suite needs (PostgreSQL, Redis, Chromium), installed only when missing.
test-deps:
	bin/install-test-deps

# CI's run (.ci/run): lint, then the production checks (migrations match the models; Django's
# deploy checklist with the production settings), then the suite. The first failure stops it.
test: $(DEV_STAMP) test-deps lint
	bin/with-test-services bin/check-production
	bin/with-test-services $(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
