"""The package's layout as checked contracts: the import layers, and no module path beyond the
package's own."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import reinpatch_forecast

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_of_pyproject_hold():
    """The layers, the pure-PyTorch network, the numpy/pandas-only datasets, the duck-typed
    plots and the acyclic folders (``[tool.importlinter]`` in ``pyproject.toml``)."""
    import importlinter.cli as lint
    code = lint.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True,
                             no_logo=True)
    assert code == 0, "an import contract is broken: run `lint-imports` for the details"


def test_unknown_paths_are_not_importable():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("reinpatch_forecast.no_such_module")
    with pytest.raises(AttributeError):
        reinpatch_forecast.no_such_module  # noqa: B018
