"""The import paths of modules and names that moved, kept working: one alias per old path.

``import reinpatch_forecast.datasets`` (and ``from reinpatch_forecast import datasets``) gives
the very module object of its new home, so a name patched or read through the old path is the
same object as through the new one, and pickles that name an old path still load; likewise
``reinpatch_forecast.foundation.save_patcher`` is ``reinpatch_forecast.patcher_io.save_patcher``.
No warning is raised: the old paths are documented and stay supported.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

#: Old module path -> the module it names now.
MOVED_MODULES: dict[str, str] = {
    "reinpatch_forecast.datasets": "reinpatch_forecast.data",
    "reinpatch_forecast.corpus": "reinpatch_forecast.foundation.corpus",
    "reinpatch_forecast.validation": "reinpatch_forecast.checks",
    "reinpatch_forecast.demo": "reinpatch_forecast.cli.demo",
    "reinpatch_forecast.nn.patching": "reinpatch_forecast.nn.patcher_interface",
}

#: Module -> {name it no longer defines: the module that does}.
MOVED_NAMES: dict[str, dict[str, str]] = {
    "reinpatch_forecast.foundation": dict.fromkeys(
        ("PATCHER_FORMAT", "PATCHER_VERSION", "PRETRAINED_SHA256", "patcher_state",
         "patcher_from_state", "save_patcher", "load_patcher", "pretrained_patcher_path",
         "load_pretrained_patcher", "file_sha256"), "reinpatch_forecast.patcher_io"),
}


def moved_name(module: str, name: str) -> Any:
    """``name`` read from ``module`` where it used to be defined (a module's ``__getattr__``
    calls this); ``AttributeError`` for a name that never was there."""
    home = MOVED_NAMES.get(module, {}).get(name)
    if home is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


class _AliasLoader(importlib.abc.Loader):
    """Loads an old path as the module of its new path (imported on first use)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._target_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self._target_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system has set the alias's spec on the shared module: give it its own back.
        module.__spec__ = self._target_spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of :data:`MOVED_MODULES`, and nothing else."""

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname not in MOVED_MODULES:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(MOVED_MODULES[fullname]))


def install() -> None:
    """Put the alias finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, _AliasFinder) for finder in sys.meta_path):
        sys.meta_path.append(_AliasFinder())
