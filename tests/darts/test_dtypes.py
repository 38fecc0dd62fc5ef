"""Forecasts come back in the dtype of the series they forecast, as with darts' own models.

The network computes in float32 (``precision="64"`` in ``pl_trainer_kwargs`` for float64), so a
float64 series gives the float32 forecast cast up, whichever darts path makes it; a likelihood's
parameters and draws are computed in the forecast's dtype.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from darts.utils.likelihood_models import GaussianLikelihood
from support import TINY_DARTS, noisy_sine

from reinpatch_forecast import ReinPatchModel
from reinpatch_forecast._lightning import quiet_trainer_kwargs

START = 200


@pytest.fixture
def pair():
    """The same sine in float32 and in float64."""
    series = noisy_sine()
    return series, series.astype(np.float64)


def _fit(make_model, series, **overrides):
    return make_model(TINY_DARTS, **overrides).fit(series)


def test_each_dtype_comes_back_and_float64_is_float32_cast_up(make_model, pair):
    s32, s64 = pair
    f32 = _fit(make_model, s32).predict(3)
    model64 = _fit(make_model, s64)
    f64 = model64.predict(3)
    assert f32.dtype == np.float32 and f64.dtype == np.float64
    assert model64.model.dtype == torch.float32
    np.testing.assert_array_equal(f64.values(), f32.values().astype(np.float64))
    # darts batches the series of a list together: a list mixing dtypes comes back in float64
    mixed = model64.predict(3, series=[s32, s64])
    assert [f.dtype for f in mixed] == [np.float64, np.float64]
    for forecast in mixed:  # the same values; one batch of two rounds apart from one of one
        np.testing.assert_allclose(forecast.values(), f64.values(), rtol=1e-5)


def test_historical_forecasts_and_backtest_follow_the_series(make_model, pair):
    s32, s64 = pair
    model = _fit(make_model, s32)
    kwargs = dict(start=START, forecast_horizon=3, retrain=False, verbose=False)
    for last_points_only in (True, False):
        h32 = model.historical_forecasts(s32, last_points_only=last_points_only, **kwargs)
        h64 = model.historical_forecasts(s64, last_points_only=last_points_only, **kwargs)
        h32, h64 = ([h32], [h64]) if last_points_only else (h32, h64)
        assert all(h.dtype == np.float32 for h in h32) and all(h.dtype == np.float64 for h in h64)
        for a, b in zip(h32, h64):
            np.testing.assert_array_equal(b.values(), a.values().astype(np.float64))
    several = model.historical_forecasts([s32, s64], last_points_only=False, **kwargs)
    assert all(f.dtype == np.float64 for forecasts in several for f in forecasts)
    for a, b in zip(*several):
        np.testing.assert_allclose(a.values(), b.values(), rtol=1e-5)
    error = model.backtest(s64, **kwargs)
    assert np.isfinite(error)
    assert error == pytest.approx(model.backtest(s32, **kwargs), rel=1e-5)


def test_historical_forecasts_with_retraining_follow_the_series(make_model, pair):
    _, s64 = pair
    model = make_model(TINY_DARTS)
    forecasts = model.historical_forecasts(s64, start=len(s64) - 4, forecast_horizon=3,
                                           retrain=True, verbose=False)
    assert forecasts.dtype == np.float64 and len(forecasts) == 2


def test_covariates_samples_and_mc_dropout_follow_the_series(make_model, pair):
    s32, s64 = pair
    covariates = noisy_sine(length=len(s64) + 3, seed=1)
    models = {}
    for series in (s32, s64):
        models[series.dtype.type] = make_model(
            TINY_DARTS, likelihood=GaussianLikelihood(), dropout=0.1).fit(
            series, past_covariates=covariates.astype(series.dtype),
            future_covariates=covariates.astype(np.float64))
    for kwargs in (dict(num_samples=5), dict(num_samples=5, mc_dropout=True),
                   dict(predict_likelihood_parameters=True)):
        out = {dtype: model.predict(3, past_covariates=covariates,
                                    future_covariates=covariates, random_state=1, **kwargs)
               for dtype, model in models.items()}
        assert out[np.float32].dtype == np.float32 and out[np.float64].dtype == np.float64
        # darts' likelihood maps the network's float32 output to its parameters and draws
        # from them in the forecast's dtype
        np.testing.assert_allclose(out[np.float64].all_values(),
                                   out[np.float32].all_values(), rtol=1e-5, atol=1e-6)


def test_precision_64_computes_in_float64(make_model, pair, tmp_path):
    s32, s64 = pair
    trainer = {**quiet_trainer_kwargs(), "precision": "64"}
    model = _fit(make_model, s64, pl_trainer_kwargs=trainer)
    assert model.model.dtype == torch.float64
    forecast = model.predict(3)
    assert forecast.dtype == np.float64
    assert model.predict(3, series=s32).dtype == np.float64  # the precision decides (darts)
    f32 = _fit(make_model, s32).predict(3).values()
    assert np.isfinite(forecast.values()).all()
    assert not np.array_equal(forecast.values(), f32.astype(np.float64))  # computed in float64
    path = str(tmp_path / "model64.pt")
    model.save(path)
    loaded = ReinPatchModel.load(path)
    assert loaded.model.dtype == torch.float64
    np.testing.assert_array_equal(loaded.predict(3).values(), forecast.values())


def test_a_loaded_float64_model_forecasts_float64(make_model, pair, tmp_path):
    _, s64 = pair
    model = _fit(make_model, s64)
    path = str(tmp_path / "model.pt")
    model.save(path)
    loaded = ReinPatchModel.load(path)
    assert loaded.predict(3).dtype == np.float64
    np.testing.assert_array_equal(loaded.predict(3).values(), model.predict(3).values())
