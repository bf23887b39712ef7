# Two commands do everything on a fresh machine:
#   make run    the main job on an embedded default (a local DuckDB file)
#   make test   ruff, mypy and the whole test suite
# Both create .venv and install the pinned dependencies first when needed.

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean venv

venv: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.lock
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m kstore.demo

lint: $(STAMP)
	$(BIN)/ruff check kstore tests benchmarks migrations
	$(BIN)/ruff format --check kstore tests benchmarks migrations
	$(BIN)/mypy

test: lint
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	command -v kcat >/dev/null || (apt-get update -qq && apt-get install -y -qq kcat)
	$(BIN)/pytest -n 2 --dist loadgroup

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) kstore.duckdb .mypy_cache .ruff_cache
