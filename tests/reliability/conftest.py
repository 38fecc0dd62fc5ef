"""Fixtures and hooks of the reliability suite; shared helpers live in reliability_support.py
(a uniquely named module, so test files never import another folder's conftest)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from reinpatch_forecast import ReinPatchForecaster, ReinPatchModel
from reliability_support import HERE, QUIET_TRAINER, TINY_DARTS, TINY_SKTIME  # noqa: F401


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """One intra-op thread: the tiny networks gain nothing from more, and the machine is busy."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def make_model(tmp_path):
    """Factory of tiny ReinPatchModels writing into a temporary work dir."""

    def factory(**overrides) -> ReinPatchModel:
        params = dict(TINY_DARTS, work_dir=str(tmp_path), pl_trainer_kwargs=dict(QUIET_TRAINER))
        params.update(overrides)
        return ReinPatchModel(**params)

    return factory


@pytest.fixture
def make_forecaster():
    """Factory of tiny seeded ReinPatchForecasters."""

    def factory(**overrides) -> ReinPatchForecaster:
        return ReinPatchForecaster(**{**TINY_SKTIME, **overrides})

    return factory


def pytest_collection_modifyitems(config, items):
    """Ignore sktime's construction notice and Lightning's CPU data-loader notices (not ours)."""
    ignored = [
        "ignore:The default of config ``remember_data``:FutureWarning",
        # Lightning / darts data-loader notices on a CPU-only machine, not about our models
        "ignore:.*LeafSpec.*is deprecated",
        "ignore:Total length of .* across ranks is zero",
        "ignore:.*'pin_memory' argument is set as true but no accelerator is found",
        "ignore:.*does not have many workers which may be a bottleneck",
        "ignore:.*have no logger configured",
        # darts' checkpointing monitors val_loss, absent when a test trains without val_series
        "ignore:.*could not find the monitored key in the returned metrics",
        "ignore:Checkpoint directory .* exists and is not empty",
    ]
    for item in items:
        if HERE in Path(item.path).parents:
            for message in ignored:
                item.add_marker(pytest.mark.filterwarnings(message))
