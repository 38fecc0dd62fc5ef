"""pandas <-> darts for the sktime face: a panel as instances, each column as one series."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sktime.forecasting.base import ForecastingHorizon

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

    Raises a ``ValueError`` naming the first missing time point, or the first non-finite value.
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
    values = frame.loc[labels].to_numpy(dtype=np.float32)  # (T, F)
    if not np.isfinite(values).all():
        row, column = np.argwhere(~np.isfinite(values))[0]
        raise ReinPatchInputError(
            f"X has a missing or infinite value at {labels[row]} in column "
            f"{frame.columns[column]!r}, which {what} reads. Fill it first, e.g. with sktime's "
            "Imputer."
        )
    return values


def future_rows(X: pd.DataFrame | None, key: tuple, labels: pd.Index,
                history: np.ndarray) -> np.ndarray:
    """``X`` over the forecast steps ``labels`` (instance ``key``), ``(n, F)`` float32.

    A step that ``X`` does not give (sktime passes ``X`` at the steps of ``fh`` only) takes the
    last known values before it: the network needs covariates at every step up to the last.
    """
    frame = X
    if frame is not None and isinstance(frame.index, pd.MultiIndex):
        frame = frame.xs(key, level=list(range(frame.index.nlevels - 1))) if key else frame
    known = pd.DataFrame(np.nan, index=labels, columns=range(history.shape[1]))
    if frame is not None:
        given = frame.reindex(labels)
        known.loc[:, :] = given.to_numpy(dtype=np.float64)
    known = pd.concat([pd.DataFrame(history[-1:]), known.reset_index(drop=True)])
    return known.ffill().to_numpy(dtype=np.float32)[1:]  # (n, F)


def horizon_labels(frame: pd.DataFrame, n: int, fh: ForecastingHorizon | None) -> pd.Index:
    """The time labels of the ``n`` steps after the end of ``frame`` (``fh`` gives the
    frequency)."""
    from sktime.datatypes import get_cutoff

    cutoff = get_cutoff(frame, return_index=True)
    freq = getattr(fh, "freq", None) if fh is not None else None
    steps = ForecastingHorizon(np.arange(1, n + 1), is_relative=True, freq=freq)
    return steps.to_absolute_index(cutoff)
