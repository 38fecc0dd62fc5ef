"""pandas <-> darts for the sktime face: a panel as instances, each column as one series."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sktime.forecasting.base import ForecastingHorizon

from ..checks import check_finite_values, numeric_values, pad_future_covariates
from ..errors import ReinPatchInputError

__all__ = ["split_instances", "to_darts", "steps_and_index", "covariate_rows", "future_rows",
           "horizon_labels"]


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


def covariate_rows(X: pd.DataFrame, key: tuple, labels: pd.Index, what: str) -> np.ndarray:
    """The rows of ``X`` (of instance ``key``) at the time ``labels``, ``(T, F)`` float32.

    Raises a ``ValueError`` naming the first missing time point, or the non-finite values
    (:func:`~reinpatch_forecast.checks.check_finite_values`).
    """
    frame = X
    if isinstance(X.index, pd.MultiIndex):
        frame = X.xs(key, level=list(range(X.index.nlevels - 1))) if key else X
    missing = labels.difference(frame.index)
    if len(missing):
        where = f" of the series {key!r}" if key else ""
        raise ReinPatchInputError(
            f"X has no row at {missing[0]} (and {len(missing) - 1} more){where}, but {what} "
            f"needs X at every time point of y it reads. Pass X with the same time index as y."
        )
    rows = frame.loc[labels]
    values = numeric_values(rows)  # (T, F) float64: checked before the float32 cast
    where = f" of the series {key!r}" if key else ""
    check_finite_values(values, f"X{where} at the time points {what} reads", labels,
                        columns=rows.columns)
    return values.astype(np.float32)


def future_rows(X: pd.DataFrame | None, key: tuple, labels: pd.Index,
                history: np.ndarray) -> np.ndarray:
    """``X`` over the forecast steps ``labels`` (instance ``key``), ``(n, F)`` float32.

    sktime passes ``X`` at the steps of ``fh`` only; a step that ``X`` does not give takes the
    last known values before it (:func:`~reinpatch_forecast.checks.pad_future_covariates`).
    """
    frame = X
    if frame is not None and isinstance(frame.index, pd.MultiIndex):
        frame = frame.xs(key, level=list(range(frame.index.nlevels - 1))) if key else frame
    known = np.full((len(labels), history.shape[1]), np.nan)
    if frame is not None:
        known = numeric_values(frame.reindex(labels))
    rows = pad_future_covariates(np.concatenate([history[-1:].astype(np.float64), known]))
    return rows[1:].astype(np.float32)  # (n, F)


def horizon_labels(frame: pd.DataFrame, n: int, fh: ForecastingHorizon | None) -> pd.Index:
    """The time labels of the ``n`` steps after the end of ``frame`` (``fh`` gives the
    frequency)."""
    from sktime.datatypes import get_cutoff

    cutoff = get_cutoff(frame, return_index=True)
    freq = getattr(fh, "freq", None) if fh is not None else None
    steps = ForecastingHorizon(np.arange(1, n + 1), is_relative=True, freq=freq)
    return steps.to_absolute_index(cutoff)
