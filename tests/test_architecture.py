"""The package's layout as checked contracts: the import layers, the old import paths, the size
of a library file."""

from __future__ import annotations

import importlib
import pickle
from pathlib import Path

import pytest

import reinpatch_forecast
from reinpatch_forecast import _moved

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "reinpatch_forecast"


def test_import_contracts_of_pyproject_hold():
    """The layers, the pure-PyTorch network, the numpy/pandas-only datasets, the duck-typed
    plots and the acyclic folders (``[tool.importlinter]`` in ``pyproject.toml``)."""
    import importlinter.cli as lint
    code = lint.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True,
                             no_logo=True)
    assert code == 0, "an import contract is broken: run `lint-imports` for the details"


@pytest.mark.parametrize("old, new", sorted(_moved.MOVED_MODULES.items()))
def test_an_old_module_path_is_the_module_of_its_new_home(old, new):
    module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__.name == new
    parent, _, name = old.rpartition(".")
    assert getattr(importlib.import_module(parent), name) is module  # from parent import name


def test_a_pickle_naming_an_old_path_loads_the_new_object():
    from reinpatch_forecast.data import prepare_ltsf

    assert pickle.loads(b"creinpatch_forecast.datasets\nprepare_ltsf\n.") is prepare_ltsf


@pytest.mark.parametrize("module, names", sorted(
    (module, sorted(names)) for module, names in _moved.MOVED_NAMES.items()))
def test_an_old_name_reads_its_new_home(module, names):
    package = importlib.import_module(module)
    for name in names:
        home = importlib.import_module(_moved.MOVED_NAMES[module][name])
        assert getattr(package, name) is getattr(home, name)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        getattr(package, "no_such_name")


def test_unknown_paths_are_not_aliased():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("reinpatch_forecast.no_such_module")
    with pytest.raises(AttributeError):
        reinpatch_forecast.no_such_module  # noqa: B018


def test_no_library_file_over_500_lines_without_its_reason_at_the_top():
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        if text.count("\n") > 500:
            head = text[:text.find('"""', 3)]  # the module docstring
            if "Over 500 lines for a reason" not in head:
                long.append(f"{path.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    assert not long, f"over 500 lines with no reason in the module docstring: {long}"
