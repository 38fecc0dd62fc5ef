"""Fixtures of the benchmark tests: the scripts in ``benchmarks/`` imported as modules."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def import_benchmark() -> Callable[[str], ModuleType]:
    """``import_benchmark(name)``: the script ``benchmarks/<name>.py`` as a module (its
    ``_common`` helpers importable the way the scripts import them)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    import _common

    return _common.import_benchmark
