"""Plain helpers shared by the test folders: model sizes and factories, series, subprocess runs.

Fixtures built on them (``make_model``, ``make_forecaster``, the one-thread setting) are in
``tests/conftest.py``; this module has a unique name, so test files import it by that name
(``from support import ...``) and never import a conftest.

The models are small: the darts contract's (:data:`SMALL_DARTS`) trains in a few seconds, the
failure-path suites' (:data:`TINY_DARTS`, :data:`TINY_SKTIME`: lookback 12, horizon 3,
``d_model`` 8, one layer, one epoch) in about a second on one CPU thread.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from darts import TimeSeries

from reinpatch_forecast import ReinPatchForecaster, ReinPatchModel
from reinpatch_forecast._lightning import quiet_trainer_kwargs

#: The darts contract's model (tests/darts/test_contract.py and its neighbours).
SMALL_DARTS = dict(
    input_chunk_length=24, output_chunk_length=6, compression_rate=4, group_size=4,
    d_model=16, n_heads=2, n_layers=1, dropout=0.0, resample_points=4, batch_size=32,
    n_epochs=2, random_state=0,
)

#: The failure-path suites' model (bad inputs, persistence, training failures, fuzz).
TINY_DARTS = dict(
    input_chunk_length=12, output_chunk_length=3, compression_rate=3, group_size=2,
    d_model=8, n_heads=1, n_layers=1, dropout=0.0, resample_points=4, batch_size=16,
    n_epochs=1, random_state=0,
)

TINY_SKTIME = dict(
    input_chunk_length=12, compression_rate=3, group_size=2, d_model=8, n_heads=1,
    n_layers=1, dropout=0.0, resample_points=4, batch_size=16, n_epochs=1, random_state=0,
)


def darts_model(work_dir, size: dict = SMALL_DARTS, /, **overrides) -> ReinPatchModel:
    """A quiet CPU :class:`ReinPatchModel` of ``size`` writing into ``work_dir``.

    ``overrides`` replace any parameter, ``work_dir`` and ``pl_trainer_kwargs`` included
    (build those with :func:`~reinpatch_forecast._lightning.quiet_trainer_kwargs`).
    """
    params = dict(size, work_dir=str(work_dir), pl_trainer_kwargs=quiet_trainer_kwargs())
    params.update(overrides)
    return ReinPatchModel(**params)


def sktime_forecaster(**overrides) -> ReinPatchForecaster:
    """A tiny seeded :class:`ReinPatchForecaster` (:data:`TINY_SKTIME` with ``overrides``)."""
    return ReinPatchForecaster(**{**TINY_SKTIME, **overrides})


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


def assert_same_arrays(actual: dict, expected: dict, name: str = "") -> None:
    """The same keys, and bit-identical arrays under each."""
    assert actual.keys() == expected.keys()
    for key in expected:
        np.testing.assert_array_equal(actual[key], expected[key], err_msg=f"{name}: {key}")


def _script_command(script: Path, *args: str) -> dict:
    """``subprocess`` arguments that run ``script`` with this interpreter, one thread, in the
    folder above the script's."""
    script = Path(script)
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
    return dict(args=[sys.executable, str(script), *args], env=env, cwd=str(script.parent.parent))


def start_script(script: Path, *args: str) -> subprocess.Popen:
    """Start ``script`` as :func:`run_script` does, without waiting (stdout and stderr piped,
    as text): to kill it, or to run several at once."""
    return subprocess.Popen(**_script_command(script, *args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def run_script(script: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``script`` in a fresh Python process (this interpreter, one thread, in the folder
    above the script's); fail with its output."""
    script = Path(script)
    result = subprocess.run(**_script_command(script, *args), capture_output=True, text=True,
                            timeout=timeout)
    if result.returncode != 0:
        raise AssertionError(
            f"{script.name} {' '.join(args)} exited with {result.returncode}\n"
            f"--- stdout ---\n{result.stdout[-4000:]}\n--- stderr ---\n{result.stderr[-4000:]}"
        )
    return result
