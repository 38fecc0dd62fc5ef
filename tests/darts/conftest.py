"""Fixtures of the darts tests: the sine series (``make_model`` is in tests/conftest.py)."""

from __future__ import annotations

import pytest
from darts import TimeSeries
from support import noisy_sine


@pytest.fixture
def make_sine():
    """The :func:`support.noisy_sine` factory."""
    return noisy_sine


@pytest.fixture
def series() -> TimeSeries:
    return noisy_sine()
