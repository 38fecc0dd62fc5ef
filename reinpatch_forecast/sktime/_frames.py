"""pandas <-> darts for the sktime face: a panel as instances, each column as one series."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sktime.forecasting.base import ForecastingHorizon

__all__ = ["split_instances", "to_darts", "steps_and_index"]


def split_instances(y: pd.DataFrame) -> list[tuple[tuple, pd.DataFrame]]:
    """Split ``y`` into ``(instance key, single series)``; the key is ``()`` for a series."""
    if not isinstance(y.index, pd.MultiIndex):
        return [((), y)]
    levels = list(range(y.index.nlevels - 1))
    return [
        (key if isinstance(key, tuple) else (key,), frame.droplevel(levels))
        for key, frame in y.groupby(level=levels, sort=False)
    ]


def to_darts(frames: Sequence[pd.DataFrame], tail: int | None = None) -> list:
    """One float32 univariate darts series (on a position index) per column per frame."""
    from darts import TimeSeries

    series = []
    for frame in frames:
        values = frame.to_numpy(dtype=np.float32)
        if tail is not None:
            values = values[-tail:]
        series.extend(TimeSeries.from_values(values[:, [j]]) for j in range(values.shape[1]))
    return series


def steps_and_index(fh: ForecastingHorizon, frame: pd.DataFrame):
    """Steps ahead (from the end of ``frame``) and absolute time index of ``fh``.

    A relative ``fh`` counts from the end of each series (as sktime does when it loops over
    the instances of a panel); an absolute ``fh`` names the same time points for all.
    """
    from sktime.datatypes import get_cutoff

    cutoff = get_cutoff(frame, return_index=True)
    relative = fh if fh.is_relative else fh.to_relative(cutoff)
    steps = np.asarray(relative.to_pandas(), dtype=np.int64)
    return steps, fh.to_absolute_index(cutoff)
