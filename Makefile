# llmload — every target explains itself: `make help`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SKIP_LOG := $(CURDIR)/$(VENV)/skipped-tests.log
PRESET ?= demo
PORT ?= 8400
SCENARIO ?= scenarios/step_load.py
HOST ?= embedded
TIERS ?= 1,2,4,8,16,32
TIER_SECONDS ?= 60
WORKERS ?= 2
MASTER ?= 127.0.0.1
RUN ?= $(shell ls -td reports/*/ 2>/dev/null | head -1)
LLMLOAD := PYTHONPATH=. $(BIN)/python -m llmload

.DEFAULT_GOAL := help
.PHONY: help setup decoder demo test test-fast bench soak mock ui run master worker report lint clean

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  \033[36m%-10s\033[0m %s\n", $$1, $$2}'

$(STAMP): requirements.txt requirements-dev.txt
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

decoder: $(STAMP) ## build the compiled SSE decoder (gcc + the Python headers; on failure one line, then pure Python)
	@$(BIN)/python -m llmload.client.build_decoder

setup: $(STAMP) decoder ## create .venv, install the pinned requirements, build the decoder (other targets do this first)

demo: $(STAMP) decoder ## step load (1..8 users) on the embedded 4-slot server, refined under the chat SLO, the plan confirmed, then its report (~3.5 min)
	$(LLMLOAD) demo

test: $(STAMP) decoder ## run lint (ruff, mypy) and the whole test suite (what CI runs)
	$(BIN)/ruff check .
	$(BIN)/mypy
	@# the browser tests first, alone (they judge live tiers in a real browser: CPU contention moves their verdicts);
	@# then the unit tests (CPU-bound, no sockets) at the lowest priority, so they only take idle CPU, beside the
	@# integration tests in three shares of whole modules (mostly waiting on servers and tiers: a whole run uses
	@# ~30 % of two cores; tests/conftest.py); the other shares' and the unit tests' output after the first share's
	@rm -f $(SKIP_LOG)
	LLMLOAD_SKIP_LOG=$(SKIP_LOG) $(BIN)/python -m pytest -q tests/browser
	export LLMLOAD_SKIP_LOG=$(SKIP_LOG); nice -n 19 $(BIN)/python -m pytest -q -p no:cacheprovider tests/unit > $(VENV)/unit-tests.log 2>&1 & unit=$$!; \
	$(BIN)/python -m pytest -q -p no:cacheprovider --ignore=tests/unit --ignore=tests/browser --shard 2/3 \
	  > $(VENV)/shard2-tests.log 2>&1 & shard2=$$!; \
	$(BIN)/python -m pytest -q -p no:cacheprovider --ignore=tests/unit --ignore=tests/browser --shard 3/3 \
	  > $(VENV)/shard3-tests.log 2>&1 & shard3=$$!; \
	$(BIN)/python -m pytest -q --ignore=tests/unit --ignore=tests/browser --shard 1/3; rest=$$?; \
	wait $$shard2; s2=$$?; echo "--- integration, second share:"; cat $(VENV)/shard2-tests.log; \
	wait $$shard3; s3=$$?; echo "--- integration, third share:"; cat $(VENV)/shard3-tests.log; \
	wait $$unit; units=$$?; echo "--- tests/unit:"; cat $(VENV)/unit-tests.log; \
	echo "--- not run on this machine (skipped, each with why; LLMLOAD_REQUIRE_BROWSER, _DECODER, _PRIVILEGED=1 fail"\
	     "them instead):"; sort $(SKIP_LOG) 2>/dev/null || true; [ -s $(SKIP_LOG) ] || echo "none"; \
	exit $$(( rest || s2 || s3 || units ))

test-fast: $(STAMP) decoder ## unit tests only (no sockets)
	$(BIN)/python -m pytest -q tests/unit

bench: $(STAMP) decoder ## run the benchmarks -> bench/results/ (one, quick: BENCH="generator --seconds 8 --streams 16,64")
	$(BIN)/python -m bench $(BENCH)

soak: $(STAMP) decoder ## 10-minute soak on the embedded server: generator and report memory -> bench/results/soak.json
	$(BIN)/python -m bench.soak --seconds 600

mock: $(STAMP) ## run the embedded simulated server in the foreground (PRESET=demo PORT=8400)
	$(LLMLOAD) server --preset $(PRESET) --port $(PORT)

ui: $(STAMP) decoder ## Locust web UI on http://127.0.0.1:8089 (SCENARIO=..., HOST=embedded or a URL)
	$(LLMLOAD) ui $(SCENARIO) --host $(HOST) $(ARGS)

run: $(STAMP) decoder ## headless step load (SCENARIO, HOST, TIERS, TIER_SECONDS), then its report in reports/run-<time>
	$(LLMLOAD) run $(SCENARIO) --host $(HOST) --tiers $(TIERS) --tier-seconds $(TIER_SECONDS) $(ARGS)

master: $(STAMP) decoder ## distributed: master waiting for WORKERS workers (SCENARIO, HOST, TIERS, TIER_SECONDS)
	$(LLMLOAD) master $(SCENARIO) --host $(HOST) --workers $(WORKERS) --tiers $(TIERS) --tier-seconds $(TIER_SECONDS) $(ARGS)

worker: $(STAMP) decoder ## distributed: one worker connecting to MASTER (run one per core, on any machine)
	$(LLMLOAD) worker $(SCENARIO) --master-host $(MASTER) $(ARGS)

report: $(STAMP) ## capacity report of a run: RUN=reports/<run> (default: newest) [ARGS="--slo voice --target-rps 200"]
	@test -n "$(RUN)" || { echo "usage: make report RUN=reports/<run>"; exit 2; }
	$(LLMLOAD) report $(RUN) $(ARGS)

lint: $(STAMP) ## ruff check and mypy (llmload/)
	$(BIN)/ruff check .
	$(BIN)/mypy

clean: ## remove .venv, caches, the built decoder and run outputs
	rm -rf $(VENV) .pytest_cache .ruff_cache llmload/client/_ssedecode*.so
	find reports -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} +

.PHONY: realtest
realtest: $(STAMP) decoder ## optional, not in CI: install vLLM (CPU) + LiteLLM outside the repo, step-load them, check the verdicts (~15 min)
	$(BIN)/python bench/realtest.py $(REALTEST_ARGS)
