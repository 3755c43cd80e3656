# AgentWorks — `make run` starts the local stack, `make test` runs the tests.
# Both create .venv and install pinned packages (constraints.txt) on first use.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8787
# The deploy gate's own tools (make check-deploy): the SAM CLI in a venv of its own (its
# dependencies conflict with constraints.txt) and asl-validator from npm, both pinned.
SAM_VENV := .venv-sam
SAM_STAMP := $(SAM_VENV)/.installed
ASL_STAMP := tools/asl/node_modules/.installed
# The real Claude Code and Codex that tests/clis drives against a scripted model (npm, pinned).
CLIS_STAMP := tools/clis/node_modules/.installed
# axe-core, the accessibility check of the browser tests (npm, pinned).
AXE_STAMP := tools/axe/node_modules/.installed
# mutmut for `make mutate` (the mutate extra, pinned in constraints.txt; not in Lambda or CI).
MUTATE_STAMP := $(VENV)/.mutate-installed
HAVE_NPM := $(shell command -v npm 2>/dev/null)
# setuptools says "Editable installation… be careful with folders named like your package" on
# every editable install (our packages live under layers/, cli/ and localstack/, so there are
# none); the box would be the only thing `make install` prints besides its own line.
QUIET_EDITABLE := PYTHONWARNINGS="ignore:Editable installation"

.PHONY: help install run test test-fast lint lint-imports bench fuzz mutate build clean \
	check-deploy

help:
	@echo "make run    - install (first time) and start the local stack on 127.0.0.1:$(PORT)"
	@echo "make test   - install (first time) and run every test"
	@echo "make bench  - measure requests, capacity, cost, cold start and throughput"
	@echo "make fuzz   - schemathesis against agentworks dev (>= 10,000 cases): server errors"
	@echo "make mutate - mutation testing of the core rules (GROUP=… for one group; ~1 h)"
	@echo "make lint   - ruff, mypy and the layers' import contracts (lint-imports)"
	@echo "make check-deploy - what a deploy would reject, offline (TEMPLATE=… for another)"

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed (found " + sys.version.split()[0] + ")")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing pinned packages into $(VENV) (first run takes about a minute)…"
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@$(QUIET_EDITABLE) $(BIN)/python -m pip install --quiet -c constraints.txt -e '.[local,dev]'
	@touch $(STAMP)

install: $(STAMP)

$(SAM_STAMP): tools/sam/constraints.txt
	@test -x $(SAM_VENV)/bin/python || $(PYTHON) -m venv $(SAM_VENV)
	@echo "Installing the pinned SAM CLI into $(SAM_VENV) (first run takes about a minute)…"
	@$(SAM_VENV)/bin/python -m pip install --quiet --upgrade pip
	@$(SAM_VENV)/bin/python -m pip install --quiet -c tools/sam/constraints.txt aws-sam-cli
	@touch $@

$(ASL_STAMP): tools/asl/package.json tools/asl/package-lock.json
	@echo "Installing asl-validator (npm ci in tools/asl)…"
	@cd tools/asl && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(AXE_STAMP): tools/axe/package.json tools/axe/package-lock.json
	@cd tools/axe && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(CLIS_STAMP): tools/clis/package.json tools/clis/package-lock.json
	@echo "Installing Claude Code and Codex for the real-CLI tests (npm ci in tools/clis)…"
	@cd tools/clis && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# cfn-lint before and after the SAM transform, dependency cycles (with the edge to cut),
# CloudFormation/IAM/Lambda quotas, the state machines through asl-validator, `sam build`
# and the built sizes (docs/deploy.md "Checked before a deploy").
check-deploy: $(STAMP) $(SAM_STAMP) $(ASL_STAMP)
	@$(BIN)/python -m deploycheck $(if $(TEMPLATE),--template $(TEMPLATE))

run: $(STAMP)
	@$(BIN)/agentworks dev --port $(PORT)

# The layers' import contracts first (pyproject.toml, [tool.importlinter]): CI runs
# `make test`, so an upward import, a store reaching a service, the CLI inside the layer or
# an import cycle fails CI, naming the contract it breaks.
test: lint-imports $(if $(HAVE_NPM),$(CLIS_STAMP) $(AXE_STAMP))
	@$(if $(HAVE_NPM),true,echo "real-CLI tests skipped: no npm on PATH — apt-get install npm")
	@command -v chromium >/dev/null 2>&1 || echo "browser tests skipped: no chromium on PATH — apt-get install chromium"
	@command -v bwrap >/dev/null 2>&1 || echo "relay sandbox tests skipped: no bwrap on PATH — apt-get install bubblewrap"
	@$(BIN)/python -m pytest -n 4 --dist loadfile --durations=10

test-fast: $(STAMP)
	@$(BIN)/python -m pytest -n 2 -m "not e2e"

# grimp reads every import, function-local ones too; no cache: a fresh graph each time
# (under a second).
lint-imports: $(STAMP)
	@$(BIN)/lint-imports --no-cache --no-logo

lint: lint-imports
	@$(BIN)/ruff check .
	@$(BIN)/ruff format --check .
	@$(BIN)/mypy layers/agentworks/agentworks cli/agentworks_cli localstack/agentworks_local functions deploycheck tools/import_contracts.py
	@$(BIN)/python skills/sync.py --check

bench: $(STAMP)
	@$(BIN)/python -m bench.run

$(MUTATE_STAMP): $(STAMP)
	@$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[local,dev,mutate]'
	@touch $@

# Mutants of messaging, identity, Crew calls, relay runs, the bridge journal and the workflow
# engine against the tests that drive them; scores and survivors in .mutate/report.json.
mutate: $(MUTATE_STAMP)
	@$(BIN)/python tools/mutate/run.py $(if $(GROUP),--group $(GROUP))

# Several minutes: not part of `make test` (docs/benchmarks.md "Server errors under fuzzing").
fuzz: $(STAMP)
	@$(BIN)/python -m bench.api_fuzz

clean:
	rm -rf $(VENV) $(SAM_VENV) tools/asl/node_modules tools/clis/node_modules tools/axe/node_modules .pytest_cache .mypy_cache .ruff_cache bench/out
