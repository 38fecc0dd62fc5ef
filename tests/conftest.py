"""Fixtures and warning filters of the whole suite; the plain helpers they use are in support.py.

Each folder holds the tests of one component (``nn/``, ``darts/``, ``sktime/``, ``cli/``, ...);
a folder's conftest adds only what that component alone needs.
"""

from __future__ import annotations

import functools

import pytest
import torch
from support import darts_model, sktime_forecaster

#: Warnings that are not about our models, ignored in every test.
IGNORED_WARNINGS = (
    # sktime 1.2's notice at every forecaster construction. Only partly effective: sktime's
    # ``_SuppressWarningPattern.__exit__`` (run whenever a forecasting horizon is converted)
    # calls ``warnings.filterwarnings("default", category=FutureWarning)``, in front of this.
    "The default of config ``remember_data``:FutureWarning",
    # Lightning / darts data-loader notices on a CPU-only machine and torch's pytree deprecation
    # that Lightning triggers (the package leaves warnings filters alone; the tests ignore them)
    r".*LeafSpec.*is deprecated.*",
    r"Total length of .* across ranks is zero.*",
    r".*'pin_memory' argument is set as true but no accelerator is found.*",
    r".*does not have many workers which may be a bottleneck.*",
    ".*have no logger configured",
    # darts' checkpointing monitors val_loss, absent when a test trains without val_series
    ".*could not find the monitored key in the returned metrics",
    "Checkpoint directory .* exists and is not empty",
)


def pytest_configure(config):
    for message in IGNORED_WARNINGS:
        config.addinivalue_line("filterwarnings", f"ignore:{message}")


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread_in_the_session():
    """One torch thread before any fixture runs: module-scoped fixtures that train (the GRPG
    learning tasks) are set up before a function-scoped fixture could act, and with two
    threads on a busy machine they ran out of pytest's timeout."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Train the tiny test networks on one thread, and restore the setting afterwards.

    They gain nothing from intra-op parallelism, and on a busy 2-core machine OpenMP spinning
    made each training step up to 100x slower.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def make_model(tmp_path):
    """Factory of quiet CPU ReinPatchModels writing into a temporary work dir.

    ``make_model(**overrides)`` gives the darts contract's small model
    (:data:`support.SMALL_DARTS`), ``make_model(TINY_DARTS, **overrides)`` the failure-path
    suites' tiny one.
    """
    return functools.partial(darts_model, tmp_path)


@pytest.fixture
def make_forecaster():
    """Factory of tiny seeded ReinPatchForecasters (:func:`support.sktime_forecaster`)."""
    return sktime_forecaster
