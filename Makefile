# Two entry points (see README): `make demo` and `make test`.
# Both create .venv on first use. CPU torch is installed before anything else so
# that no dependency can pull a multi-GB CUDA build.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_PIN := torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: setup demo test docs bench-segments clean

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

bench-segments: setup
	$(BIN)/python benchmarks/segments.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis docs/_build demo-output
