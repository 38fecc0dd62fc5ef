"""The data an experiment fits and scores on: LTSF files, and event-rich files with covariates.

Every source gives a :class:`Data`: scaled arrays ``(T, C)`` per split (val and test include
their lookback rows), the darts series a model fits on, the covariates of a setting, and the
``PredictFn`` that forecasts the stride-1 windows ``_protocol.evaluate_windows`` hands it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from _protocol import PredictFn, darts_predict_fn

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
#: Calendar attributes of the future covariates and the divisor that maps each onto [0, 1].
CALENDAR = (("hour", 23), ("day_of_week", 6), ("month", 11))  # darts' month is 0..11
#: Datasets whose covariates include the calendar, and the zone of its clock.
CALENDAR_ZONES = {"vic_elec": "Australia/Melbourne"}


@dataclass
class Data:
    """Scaled splits, and what darts needs to fit and forecast them.

    Attributes
    ----------
    arrays
        ``{"train" | "val" | "test": (T, C) float32}``.
    std
        The train-fitted scaler's standard deviation per target column ``(C,)`` (``None``:
        data of no file, such as a test's).
    target
        Time-indexed darts series per split; ``None`` for data without covariates (a model
        then fits ``TimeSeries.from_values`` of the arrays).
    settings
        ``setting -> {"past_covariates" | "future_covariates": TimeSeries}``.
    """

    arrays: dict[str, np.ndarray]
    std: np.ndarray | None = None
    target: dict[str, Any] | None = None
    settings: dict[str, dict[str, Any]] = field(default_factory=lambda: {"target": {}})

    def covariates(self, setting: str) -> dict[str, Any]:
        if setting not in self.settings:
            raise ValueError(f"unknown setting {setting!r}: use one of {list(self.settings)}")
        return self.settings[setting]

    def series(self, split: str):
        from darts import TimeSeries

        if self.target is not None:
            return self.target[split]
        return TimeSeries.from_values(self.arrays[split])

    def predict_fn(self, model, split: str, horizon: int, setting: str) -> PredictFn:
        if self.target is None:
            return darts_predict_fn(model, horizon)
        return covariate_predict_fn(model, self.target[split], horizon, self.covariates(setting))


def load_splits(dataset: str, lookback: int, horizon: int, data_dir: str | Path = DEFAULT_DATA):
    """The scaled LTSF splits of a dataset (an event-rich one keeps only its target columns)."""
    from reinpatch_forecast.data import EVENT_DATASETS, load_ltsf_frame, prepare_ltsf

    frame = load_ltsf_frame(dataset, data_dir=str(data_dir))
    event = EVENT_DATASETS.get(dataset)
    targets = None if event is None else event.target_columns
    return prepare_ltsf(frame, dataset, lookback, horizon, target_columns=targets)


def ltsf_data(dataset: str, lookback: int, horizon: int, data_dir: str | Path) -> Data:
    splits = load_splits(dataset, lookback, horizon, data_dir)
    return Data({s: splits.split(s) for s in ("train", "val", "test")}, std=splits.std)


# -- covariates --------------------------------------------------------------------------------


def calendar_covariates(index, tz: str | None = None):
    """Hour of day, day of week and month of ``index`` (a DatetimeIndex), each in [0, 1];
    ``tz``: the zone whose wall clock a naive UTC index is read on."""
    from darts.utils.timeseries_generation import datetime_attribute_timeseries

    parts = [datetime_attribute_timeseries(index, attribute, dtype=np.float32, tz=tz) / divisor
             for attribute, divisor in CALENDAR]
    return parts[0].stack(parts[1]).stack(parts[2])


def split_rows(splits) -> tuple[np.ndarray, Any]:
    """Every row of the three scaled splits once ``(T, C)``, with their evenly spaced dates."""
    import pandas as pd

    lookback = splits.lookback
    rows = np.concatenate([splits.train, splits.val[lookback:], splits.test[lookback:]])
    dates = splits.dates["train"].append([splits.dates["val"][lookback:],
                                          splits.dates["test"][lookback:]])
    index = pd.DatetimeIndex(dates, freq="infer")
    if index.freq is None:
        raise ValueError("the splits' dates are not evenly spaced")
    return rows, index


def time_series(values: np.ndarray, dates, names: Sequence[str], freq):
    import pandas as pd
    from darts import TimeSeries

    return TimeSeries.from_times_and_values(
        pd.DatetimeIndex(dates, freq=freq), np.ascontiguousarray(values), columns=list(names))


def event_data(dataset: str, lookback: int, horizon: int, data_dir: str | Path) -> Data:
    """An event-rich dataset's targets and covariates (``EVENT_DATASETS`` roles), each scaled
    on its training rows; settings ``target`` and ``covariates``."""
    from reinpatch_forecast.data import EVENT_DATASETS, load_ltsf_frame, prepare_ltsf

    roles = EVENT_DATASETS[dataset]
    splits = load_splits(dataset, lookback, horizon, data_dir)
    frame = load_ltsf_frame(dataset, data_dir=str(data_dir))
    covariate_splits = prepare_ltsf(frame, dataset, lookback, horizon,
                                    target_columns=roles.covariates)
    rows, index = split_rows(covariate_splits)
    names = list(covariate_splits.columns)

    def columns_of(wanted: Sequence[str]):
        if not wanted:
            return None
        return time_series(rows[:, [names.index(c) for c in wanted]], index, wanted, index.freq)

    future = columns_of(roles.future_covariates)
    if dataset in CALENDAR_ZONES:
        future = future.stack(calendar_covariates(index, CALENDAR_ZONES[dataset]))
    given = {"past_covariates": columns_of(roles.past_covariates), "future_covariates": future}
    target = {s: time_series(splits.split(s), splits.dates[s], splits.columns, index.freq)
              for s in ("train", "val", "test")}
    return Data({s: t.values(copy=False) for s, t in target.items()}, std=splits.std,
                target=target, settings={"target": {}, "covariates": {
                    k: v for k, v in given.items() if v is not None}})


def covariate_predict_fn(model, series, horizon: int, covariates: dict[str, Any]) -> PredictFn:
    """A ``PredictFn`` over the stride-1 windows of ``series`` in order (one
    ``evaluate_windows`` call per function): each batch is one ``model.predict`` with the
    covariate series, darts picking each window's span by its dates."""
    from reinpatch_forecast._lightning import quiet_lightning

    values = series.values(copy=False)
    lookback = model.input_chunk_length
    position = [0]

    def predict(x: np.ndarray) -> np.ndarray:
        start, count = position[0], len(x)
        if not np.array_equal(x, np.stack([values[s:s + lookback]
                                           for s in range(start, start + count)])):
            raise RuntimeError(f"windows {start}..{start + count} are not the next ones of "
                               "the series: score with one evaluate_windows call per function")
        windows = [series[s:s + lookback] for s in range(start, start + count)]
        given = {name: [value] * count for name, value in covariates.items()}
        with quiet_lightning():
            forecasts = model.predict(horizon, series=windows, batch_size=count,
                                      verbose=False, **given)
        position[0] += count
        return np.stack([forecast.values(copy=False) for forecast in forecasts])  # (b, H, C)

    return predict


def original_scale_mae(mae_per_channel: Sequence[float], std: Sequence[float]) -> float:
    """The MAE in the data's own unit, averaged over the target columns: column ``c``'s MAE
    in its unit is ``std_c`` times its scaled MAE."""
    mae, std = np.asarray(mae_per_channel, dtype=np.float64), np.asarray(std, dtype=np.float64)
    if mae.shape != std.shape:
        raise ValueError(f"{mae.shape[0]} channel MAEs for a scaler of {std.shape[0]} columns")
    return float(np.mean(mae * std))
