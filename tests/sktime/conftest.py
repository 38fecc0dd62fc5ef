"""Shared settings of the sktime tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch


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


def pytest_collection_modifyitems(config, items):
    """Ignore the notice sktime 1.2 gives at every forecaster construction (not ours).

    Only partly effective: sktime 1.2's ``_SuppressWarningPattern.__exit__`` (run whenever a
    forecasting horizon is converted) calls ``warnings.filterwarnings("default",
    category=FutureWarning)``, which puts a filter in front of this one.
    """
    here = Path(__file__).parent
    notice = pytest.mark.filterwarnings(
        "ignore:The default of config ``remember_data``:FutureWarning"
    )
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(notice)
