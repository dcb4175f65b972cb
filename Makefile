# The two commands: `make run` (zero-setup demo) and `make test` (the whole suite on real
# PostgreSQL and Redis). Everything installs itself; see README.md.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint test-deps install

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py ensure_cli_client
	$(BIN)/python manage.py seed_demo
	bin/run-dev

# System packages the suite needs (PostgreSQL, Redis, Chromium), installed only when missing.
test-deps:
	bin/install-test-deps

test: $(STAMP) test-deps
	bin/with-test-services $(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
