"""Shared fixtures of the darts contract suite: tiny models, quiet CPU trainers, temp dirs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from darts import TimeSeries

from reinpatch_forecast import ReinPatchModel

QUIET_TRAINER = {
    "accelerator": "cpu",
    "enable_progress_bar": False,
    "enable_model_summary": False,
    "logger": False,
}


def noisy_sine(length: int = 240, period: int = 20, noise: float = 0.1, seed: int = 0,
               components: int = 1, start=pd.Timestamp("2020-01-01"), freq: str = "h"
               ) -> TimeSeries:
    """Sine waves (one phase per component) plus Gaussian noise, float32."""
    rng = np.random.default_rng(seed)
    t = np.arange(length)[:, None]
    phases = np.arange(components)[None, :]
    values = np.sin(2 * np.pi * t / period + phases) + noise * rng.standard_normal(
        (length, components)
    )
    index = pd.date_range(start, periods=length, freq=freq)
    return TimeSeries.from_times_and_values(
        index, values.astype(np.float32), columns=[f"c{i}" for i in range(components)]
    )


@pytest.fixture
def make_sine():
    """The :func:`noisy_sine` factory."""
    return noisy_sine


@pytest.fixture
def series() -> TimeSeries:
    return noisy_sine()


@pytest.fixture
def make_model(tmp_path):
    """Factory of tiny ReinPatchModels writing into a temporary work dir."""

    def factory(**overrides) -> ReinPatchModel:
        params = dict(
            input_chunk_length=24, output_chunk_length=6, compression_rate=4, group_size=4,
            d_model=16, n_heads=2, n_layers=1, dropout=0.0, resample_points=4,
            batch_size=32, n_epochs=2, random_state=0, work_dir=str(tmp_path),
            pl_trainer_kwargs=dict(QUIET_TRAINER),
        )
        params.update(overrides)
        return ReinPatchModel(**params)

    return factory
