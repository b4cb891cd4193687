# llmload — every target explains itself: `make help`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PRESET ?= demo
PORT ?= 8400

.DEFAULT_GOAL := help
.PHONY: help setup demo test test-fast bench mock lint clean

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  \033[36m%-10s\033[0m %s\n", $$1, $$2}'

$(STAMP): requirements.txt requirements-dev.txt
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

setup: $(STAMP) ## create .venv and install the pinned requirements (other targets do this first)

demo: $(STAMP) ## start the embedded server, run a short headless load against it, stop everything
	$(BIN)/python -m llmload.demo

test: $(STAMP) ## run lint and the whole test suite (what CI runs)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

test-fast: $(STAMP) ## unit tests only (no sockets)
	$(BIN)/python -m pytest -q tests/unit

bench: $(STAMP) ## run the benchmarks; results go to bench/results/
	$(BIN)/python -m bench

mock: $(STAMP) ## run the embedded simulated server in the foreground (PRESET=demo PORT=8400)
	$(BIN)/python -m llmload.server --preset $(PRESET) --port $(PORT)

lint: $(STAMP) ## ruff check
	$(BIN)/ruff check .

clean: ## remove .venv, caches and run outputs
	rm -rf $(VENV) .pytest_cache .ruff_cache
	find reports -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} +
