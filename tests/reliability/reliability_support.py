"""Shared helpers of the reliability suite (issue #8): tiny quiet models and series.

Every model here is tiny (lookback 12, horizon 3, ``d_model`` 8, one layer, one or two epochs)
and trains in about a second on one CPU thread.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from darts import TimeSeries

HERE = Path(__file__).parent
SCRIPTS = HERE / "scripts"

QUIET_TRAINER = {
    "accelerator": "cpu",
    "enable_progress_bar": False,
    "enable_model_summary": False,
    "logger": False,
}

TINY_DARTS = dict(
    input_chunk_length=12, output_chunk_length=3, compression_rate=3, group_size=2,
    d_model=8, n_heads=1, n_layers=1, dropout=0.0, resample_points=4, batch_size=16,
    n_epochs=1, random_state=0,
)

TINY_SKTIME = dict(
    input_chunk_length=12, compression_rate=3, group_size=2, d_model=8, n_heads=1,
    n_layers=1, dropout=0.0, resample_points=4, batch_size=16, n_epochs=1, random_state=0,
)


def sine_values(length: int = 60, scale: float = 1.0, offset: float = 0.0,
                seed: int = 0) -> np.ndarray:
    """A noisy sine wave of ``length`` steps, ``offset + scale * (sin + noise)``."""
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    return offset + scale * (np.sin(2 * np.pi * t / 12) + 0.1 * rng.standard_normal(length))


def darts_series(values, start=pd.Timestamp("2020-01-01"), freq="h") -> TimeSeries:
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    index = pd.date_range(start, periods=len(values), freq=freq)
    return TimeSeries.from_times_and_values(index, values, columns=[
        f"c{i}" for i in range(values.shape[1])
    ])


def sktime_series(values, name: str = "y") -> pd.Series:
    return pd.Series(np.asarray(values, dtype=np.float64), name=name,
                     index=pd.period_range("2000-01", periods=len(values), freq="M"))


def run_script(name: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``scripts/<name>`` in a fresh Python process (this interpreter); fail with its output."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
    result = subprocess.run(
        [sys.executable, str(SCRIPTS / name), *args], capture_output=True, text=True,
        timeout=timeout, env=env, cwd=str(HERE),
    )
    if result.returncode != 0:
        raise AssertionError(
            f"{name} {' '.join(args)} exited with {result.returncode}\n"
            f"--- stdout ---\n{result.stdout[-4000:]}\n--- stderr ---\n{result.stderr[-4000:]}"
        )
    return result
