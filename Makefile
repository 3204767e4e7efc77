# bnmfzoo — every target sets itself up on a fresh machine.
#   make demo    create .venv (Python >= 3.12), install, run `bnmfzoo demo`
#   make test    create .venv, install, lint, run the test suite (not the slow marker)
#   make test-slow   the long calibration / reproduction tests
#   make notebooks   run every notebook at its default size and print the wall time of each
#   make docs    install the docs extra, build the site (docs/_build/html) with warnings as errors
#   make lint    ruff
#   make bench   benchmarks/speed/ (minutes; ours vs a baseline, prints ratios)
#   make reproduce   benchmarks/reproduce/ (paper reproductions; hours on 2 cores)
#   make mutate  mutation check of the fast tests (benchmarks/mutation/REPORT.md; CPU hours)
#   make bench-env-sigprofiler   benchmarks/.venv-sigprofiler (SigProfilerExtractor + CPU torch)
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV      ?= .venv
VPY       := $(VENV)/bin/python
STAMP     := $(VENV)/.installed-stamp
# PyTensor's compile cache, kept between runs (outside the work tree, so fresh clones share it).
CACHE_DIR ?= $(HOME)/.cache/bnmfzoo
export PYTENSOR_FLAGS ?= base_compiledir=$(CACHE_DIR)/pytensor
export NUMBA_CACHE_DIR ?= $(CACHE_DIR)/numba
export MPLBACKEND ?= Agg
# One BLAS thread per process: BLAS oversubscription made NUTS ~19x slower on 2 cores.
export OMP_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1
export BNMFZOO_DATA ?= $(abspath ../shared/data)

# Find a Python >= 3.12: python3.13/python3.12 on PATH, then pyenv's installed versions.
define FIND_PYTHON
for c in python3.13 python3.12; do \
  p=$$(command -v $$c 2>/dev/null) && "$$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { echo "$$p"; exit 0; }; \
done; \
root=$$(pyenv root 2>/dev/null || echo "$$HOME/.pyenv"); \
for p in $$(ls -d "$$root"/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV); do \
  "$$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { echo "$$p"; exit 0; }; \
done; \
exit 1
endef

.PHONY: help venv demo test test-slow test-all lint bench reproduce notebooks docs clean mutate \
  bench-env-sigprofiler
help:
	@sed -n '2,11p' Makefile

$(VPY):
	@py=$$( $(FIND_PYTHON) ) || { echo "ERROR: bnmfzoo needs Python >= 3.12 (PyMC 6 / ArviZ 1)." \
	  "Looked for python3.13/python3.12 on PATH and under $$(pyenv root 2>/dev/null || echo ~/.pyenv)/versions." \
	  "Install one (e.g. 'pyenv install 3.12') and re-run make." >&2; exit 1; }; \
	echo "Creating $(VENV) with $$py"; "$$py" -m venv $(VENV)

# Re-install only when pyproject.toml changed (or the venv is new).
$(STAMP): pyproject.toml | $(VPY)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -e ".[test]"
	@mkdir -p $(CACHE_DIR)/pytensor $(CACHE_DIR)/numba
	@touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/bnmfzoo demo

lint: $(STAMP)
	$(VENV)/bin/ruff check bnmfzoo tests benchmarks notebooks

# The fast suite runs on TEST_WORKERS processes (pytest-xdist; one test file per worker at a time,
# so a module's fixtures are built once): ~16 CPU minutes, ~9-10 minutes of wall time on 2 cores.
# The package's doctests are tests/house/test_doctests.py, so this is what a plain `pytest tests` runs.
# benchmarks/ holds the self-tests of the benchmark tools (the mutation harness; a slow size run),
# which import benchmarks/; tests/ never does.
TEST_WORKERS ?= 2
test: $(STAMP) lint
	$(VPY) -m pytest -m "not slow" -q --durations=15 \
	  -n $(TEST_WORKERS) --dist loadfile tests benchmarks

test-slow: $(STAMP)
	$(VPY) -m pytest -m slow -q

test-all: $(STAMP) lint
	$(VPY) -m pytest -q

notebooks: $(STAMP)
	$(VPY) -m pytest -m slow -q -s -rA tests/frontends/test_notebooks.py -k full_size

# The docs extra has its own stamp, so `make test` never installs the documentation tools.
DOCS_STAMP := $(VENV)/.docs-installed-stamp
$(DOCS_STAMP): pyproject.toml | $(STAMP)
	$(VPY) -m pip install --quiet -e ".[docs]"
	@touch $(DOCS_STAMP)

# Sphinx + PyData theme; API reference from the docstrings; the notebooks executed at their small
# size (cached in docs/_build/.jupyter_cache). Warnings are errors.
docs: $(STAMP) $(DOCS_STAMP)
	$(VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html

# Scripts are modules of the benchmarks package: python -m benchmarks.speed.gibbs
bench: $(STAMP)
	@for f in benchmarks/speed/[!_]*.py; do m=$${f%.py}; m=$${m//\//.}; \
	  echo "== $$m"; $(VPY) -m $$m || exit 1; done

# Each paper at the sizes its RESULTS.md rows use by default; long (hours). REPRODUCE=... to
# run a subset, e.g. make reproduce REPRODUCE="brouwer2017.convergence lumbreras2020.parliament"
REPRODUCE ?= brouwer2017.convergence brouwer2017.cross_validation brouwer2017.noise_sparsity \
  lumbreras2020.parliament lumbreras2020.prediction masood2016_rrt.elbo \
  sampling_quality.reduced masood2019.noise masood2019.ksd_time masood2019.missing \
  masood2019.vs_nuts
reproduce: $(STAMP)
	@for m in $(REPRODUCE); do echo "== benchmarks.reproduce.$$m"; \
	  nice -n 10 $(VPY) -m benchmarks.reproduce.$$m || exit 1; done

# Each catalog mutation (benchmarks/mutation/catalog_*.py) on a copy of the tree, its named fast
# tests only, one at a time, niced. MUTATE="--catalog binary" or MUTATE="--only ID" for a subset.
MUTATE ?=
mutate: $(STAMP)
	nice -n 15 $(VPY) -m benchmarks.mutation.run $(MUTATE)

# SigProfilerExtractor for benchmarks/signatures/ only, never a dependency of bnmfzoo: its own venv
# on the system Python 3.11, where `torch==2.13.0` is the CPU wheel on this machine's disk (a plain
# `torch` from the package index is a CUDA build of several GB). Torch first, so SigProfiler's
# `torch` requirement is already met and pulls nothing more.
SIGPROF_VENV ?= benchmarks/.venv-sigprofiler
SIGPROF_PY   ?= python3
SIGPROF_STAMP := $(SIGPROF_VENV)/.installed-stamp
$(SIGPROF_STAMP):
	$(SIGPROF_PY) -m venv $(SIGPROF_VENV)
	nice -n 10 $(SIGPROF_VENV)/bin/python -m pip install --quiet --upgrade pip
	nice -n 10 $(SIGPROF_VENV)/bin/python -m pip install --quiet "torch==2.13.0"
	nice -n 10 $(SIGPROF_VENV)/bin/python -m pip install --quiet "torch==2.13.0" "SigProfilerExtractor>=1.4,<1.5"
	$(SIGPROF_VENV)/bin/python -c "import torch, SigProfilerExtractor; print('torch', torch.__version__)"
	@touch $(SIGPROF_STAMP)

bench-env-sigprofiler: $(SIGPROF_STAMP)

clean:
	rm -rf $(VENV) .pytest_cache bnmfzoo-demo docs/_build docs/api/generated docs/notebooks
