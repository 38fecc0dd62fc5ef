"""pandas <-> darts for the sktime face: a panel as instances, each column as one series.

A forecast's *plans* are ``(key, frame, steps, time index)`` per instance: its key (``()`` for
a single series), its data, the steps of ``fh`` ahead of its end and their time labels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sktime.forecasting.base import ForecastingHorizon

from ..checks import check_finite_values, numeric_values, pad_future_covariates
from ..errors import ReinPatchInputError

__all__ = ["split_instances", "to_darts", "steps_and_index", "covariate_rows", "future_rows",
           "horizon_labels", "darts_covariates", "forecast_frame"]


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


def darts_covariates(instances: Sequence[tuple[tuple, pd.DataFrame]], X: pd.DataFrame | None,
                     kind: str, what: str, lookback: int | None = None, n: int = 0,
                     X_ahead: pd.DataFrame | None = None,
                     fh: ForecastingHorizon | None = None) -> dict:
    """The darts covariate argument of ``instances``: ``X`` of each instance, once per column
    of its frame (every column is its own darts series), on the positions of the series.

    Parameters
    ----------
    instances
        ``(key, frame)`` per instance (:func:`split_instances`).
    X
        The exogenous data seen so far, or ``None`` (no covariates: ``{}``).
    kind
        ``"future"`` or ``"past"``: the darts argument (``future_covariates``, ...).
    what
        The job, for messages (``"training"``, ``"a forecast"``).
    lookback, n, X_ahead, fh
        For a forecast (``n > 0``): the series are the last ``lookback`` steps, and future
        covariates continue over the ``n`` steps after them, from ``X_ahead`` (``fh`` gives
        the frequency).
    """
    if X is None:
        return {}
    from darts import TimeSeries

    series = []
    for key, frame in instances:
        labels = frame.index if n == 0 else frame.index[-lookback:]
        values = covariate_rows(X, key, labels, what)  # (T, F)
        if n and kind == "future":
            ahead = horizon_labels(frame, n, fh)
            values = np.concatenate([values, future_rows(X_ahead, key, ahead, values)])
        covariate = TimeSeries.from_values(values)
        series.extend([covariate] * frame.shape[1])
    return {f"{kind}_covariates": series}


def forecast_frame(plans: Sequence[tuple], values: np.ndarray, columns: pd.Index,
                   index_names: Sequence) -> pd.DataFrame:
    """Forecasts ``(n, S * C, ...)`` of the ``S`` instances of ``plans`` (``C`` columns each)
    as sktime's output frame: the rows of each instance's ``fh`` steps, with ``columns``
    (``C`` times the trailing sizes) and a row index named ``index_names``."""
    n_columns = values.shape[1] // len(plans)
    blocks = []
    for i, (_, _, steps, _) in enumerate(plans):
        block = values[:, i * n_columns:(i + 1) * n_columns][steps - 1]  # (len(fh), C, ...)
        blocks.append(block.reshape(len(block), -1))
    if len(plans) == 1 and plans[0][0] == ():
        index = plans[0][3]
    else:
        index = pd.MultiIndex.from_tuples(
            [key + (t,) for key, _, _, times in plans for t in times], names=index_names
        )
    frame = pd.DataFrame(np.concatenate(blocks, axis=0).astype(np.float64), index=index,
                         columns=columns)
    if not isinstance(index, pd.MultiIndex):
        frame.index.name = index_names[0]
    return frame
