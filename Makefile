# Two entry points (see README): `make demo` and `make test`.
# Both create .venv on first use. CPU torch is installed before anything else so
# that no dependency can pull a multi-GB CUDA build.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_PIN := torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: setup demo test docs bench bench-report clean

setup: $(STAMP)

$(STAMP): pyproject.toml setup.cfg
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH_PIN)
	$(BIN)/python -m pip install --quiet -e ".[dev,docs,onnx]"
	touch $(STAMP)

demo: setup
	$(BIN)/reinpatch-forecast demo --out demo-output

test: setup
	$(BIN)/python -m pytest

docs: setup
	$(MAKE) -C docs html SPHINXBUILD=$(abspath $(BIN))/sphinx-build

# The LTSF table's default rows on ETTh1, H = 96, seed 0 (runs already recorded are skipped);
# `python benchmarks/run.py list` shows every experiment.
bench: setup
	$(BIN)/python benchmarks/run.py ltsf --threads 1

# Every table rebuilt from its run records in benchmarks/results/*_runs.jsonl.
bench-report: setup
	$(BIN)/python benchmarks/run.py report

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis docs/_build demo-output
