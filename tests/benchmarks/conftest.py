"""Fixtures of the benchmark tests: the modules of ``benchmarks/`` imported by their bare
names, as the runner imports them."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))


@pytest.fixture(scope="module")
def import_benchmark() -> Callable[[str], ModuleType]:
    """``import_benchmark(name)``: ``benchmarks/<name>.py`` as a module."""
    return importlib.import_module
