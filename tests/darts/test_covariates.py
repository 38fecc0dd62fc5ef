"""Covariates in the darts model: past, future and static, through darts' own API."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from darts import TimeSeries
from darts.metrics import mse
from darts.utils.timeseries_generation import datetime_attribute_timeseries

from reinpatch_forecast import ReinPatchModel

LENGTH = 600
TRAIN = 480  # steps the models train on; the rest is the holdout
START = pd.Timestamp("2021-01-01")


def _index(length: int = LENGTH) -> pd.DatetimeIndex:
    return pd.date_range(START, periods=length, freq="h")


def _event_task(seed: int = 0):
    """A target driven by a known on/off event: the event adds 3 while it is on."""
    rng = np.random.default_rng(seed)
    event = (rng.random(LENGTH) < 0.1).astype(np.float32)
    values = np.sin(np.arange(LENGTH) / 6) + 3 * event + 0.05 * rng.standard_normal(LENGTH)
    target = TimeSeries.from_times_and_values(_index(), values.astype(np.float32)[:, None])
    events = TimeSeries.from_times_and_values(_index(), event[:, None], columns=["event"])
    return target, events


@pytest.fixture(scope="module")
def event_task():
    return _event_task()


def _holdout_mse(model: ReinPatchModel, target, future_covariates=None) -> float:
    forecasts = model.historical_forecasts(
        target, future_covariates=future_covariates, start=TRAIN, forecast_horizon=6, stride=6,
        retrain=False, last_points_only=False, verbose=False,
    )
    return float(np.mean(mse([target] * len(forecasts), forecasts)))


@pytest.mark.parametrize("patcher", ["learned", "uniform"])
def test_a_known_future_event_halves_the_error(make_model, event_task, patcher):
    target, events = event_task
    train = target[:TRAIN]
    settings = dict(patcher=patcher, n_epochs=10, d_model=32, optimizer_kwargs={"lr": 3e-3})
    without = make_model(**settings).fit(train)
    with_events = make_model(**settings)
    with_events.fit(train, future_covariates=events)
    error_without = _holdout_mse(without, target)
    error_with = _holdout_mse(with_events, target, events)
    assert error_with <= 0.5 * error_without, (error_with, error_without)


def test_past_covariates_reach_the_tokens(make_model, event_task):
    """A lagged driver known only in the past: its values enter the patch tokens."""
    target, events = event_task
    model = make_model(n_epochs=1).fit(target[:TRAIN], past_covariates=events)
    config = model.model.network.config
    assert (config.n_past_covariates, config.n_future_covariates) == (1, 0)
    forecast = model.predict(6, series=target[:TRAIN], past_covariates=events)
    shifted = events.with_values(events.values() * 0 + 5.0)
    moved = model.predict(6, series=target[:TRAIN], past_covariates=shifted)
    assert not np.allclose(forecast.values(), moved.values())


def test_future_covariates_count_their_history_as_past_features(make_model, event_task):
    target, events = event_task
    calendar = datetime_attribute_timeseries(_index(LENGTH + 48), "hour", one_hot=False) / 23
    model = make_model(n_epochs=1).fit(target[:TRAIN], past_covariates=events,
                                       future_covariates=calendar)
    config = model.model.network.config
    # the lookback holds the event and the calendar's history; the horizon the calendar
    assert (config.n_past_covariates, config.n_future_covariates) == (2, 1)
    assert model.predict(6, series=target, past_covariates=events,
                         future_covariates=calendar).n_timesteps == 6


def test_static_covariates_become_a_token_embedding(make_model):
    rng = np.random.default_rng(1)
    series = []
    for level in (0.0, 1.0):
        values = (np.sin(np.arange(200) / 5) + level + 0.1 * rng.standard_normal(200))
        s = TimeSeries.from_times_and_values(_index(200), values.astype(np.float32)[:, None])
        series.append(s.with_static_covariates(pd.DataFrame({"site": [level]})))
    model = make_model(n_epochs=1).fit(series)
    assert model.model.network.config.n_static_covariates == 1
    assert model.model.network.backbone.covariates.static_proj.weight.shape == (16, 1)
    a, b = model.predict(6, series=series)
    assert a.n_timesteps == b.n_timesteps == 6


def test_save_and_load_with_covariates_give_identical_forecasts(make_model, event_task,
                                                                tmp_path):
    target, events = event_task
    model = make_model(n_epochs=1).fit(target[:TRAIN], past_covariates=events,
                                       future_covariates=events)
    path = tmp_path / "model.pt"
    model.save(str(path))
    loaded = ReinPatchModel.load(str(path))
    kwargs = dict(series=target[:TRAIN], past_covariates=events, future_covariates=events)
    np.testing.assert_array_equal(model.predict(6, **kwargs).values(),
                                  loaded.predict(6, **kwargs).values())


def test_same_seed_same_forecast_with_covariates(make_model, event_task):
    target, events = event_task
    forecasts = [
        make_model(n_epochs=1).fit(target[:TRAIN], future_covariates=events)
        .predict(6, future_covariates=events).values()
        for _ in range(2)
    ]
    np.testing.assert_array_equal(*forecasts)


def test_backtest_and_gridsearch_with_covariates(make_model, event_task):
    target, events = event_task
    model = make_model(n_epochs=1).fit(target[:TRAIN], future_covariates=events)
    error = model.backtest(target, future_covariates=events, start=TRAIN + 20, forecast_horizon=6,
                           stride=12, retrain=False, verbose=False)
    assert np.isfinite(error)
    best, params, _ = ReinPatchModel.gridsearch(
        {"input_chunk_length": [24], "output_chunk_length": [6], "compression_rate": [4, 8],
         "d_model": [8], "n_heads": [1], "n_layers": [1], "n_epochs": [1],
         "random_state": [0], "pl_trainer_kwargs": [model.trainer_params]},
        series=target[:TRAIN + 20], val_series=target[TRAIN + 20:], future_covariates=events,
    )
    assert params["compression_rate"] in (4, 8)


# -- errors a user can make ----------------------------------------------------------------


def test_covariates_absent_at_predict_are_named(make_model, event_task):
    target, events = event_task
    model = make_model(n_epochs=1).fit(target[:TRAIN], future_covariates=events)
    with pytest.raises(ValueError, match="future_covariates"):
        model.predict(6, series=target[:TRAIN])


def test_covariates_at_predict_that_fit_did_not_see_are_refused(make_model, event_task):
    target, events = event_task
    model = make_model(n_epochs=1).fit(target[:TRAIN])
    with pytest.raises(ValueError, match="past_covariates"):
        model.predict(6, series=target[:TRAIN], past_covariates=events)


def test_too_short_future_covariates_name_the_span_needed(make_model, event_task):
    target, events = event_task
    model = make_model(n_epochs=1).fit(target[:TRAIN], future_covariates=events)
    short = events[:TRAIN + 2]  # the forecast needs the 6 steps after the series
    with pytest.raises(ValueError, match="future_covariates") as error:
        model.predict(6, series=target[:TRAIN], future_covariates=short)
    assert "time" in str(error.value).lower()


def test_nan_in_covariates_is_refused_with_its_place(make_model, event_task):
    target, events = event_task
    values = events.values().copy()
    values[50] = np.nan
    broken = events.with_values(values)
    with pytest.raises(ValueError, match="past_covariates.*NaN"):
        make_model(n_epochs=1).fit(target[:TRAIN], past_covariates=broken)


def test_covariates_on_another_time_axis_are_refused(make_model, event_task):
    target, events = event_task
    elsewhere = TimeSeries.from_times_and_values(
        pd.date_range("1990-01-01", periods=LENGTH, freq="h"), events.values()
    )
    with pytest.raises(ValueError, match="covariates"):
        make_model(n_epochs=1).fit(target[:TRAIN], past_covariates=elsewhere)
