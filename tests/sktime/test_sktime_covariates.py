"""Exogenous X in the sktime forecaster: mapped to darts' future or past covariates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reinpatch_forecast import ReinPatchForecaster

FH = [1, 2, 3, 4, 5, 6]


@pytest.fixture(scope="module")
def event_data():
    """A target driven by a known on/off event, and the event as X."""
    rng = np.random.default_rng(0)
    index = pd.date_range("2020-01-01", periods=400, freq="h")
    event = (rng.random(400) < 0.1).astype(float)
    y = pd.DataFrame({"y": np.sin(np.arange(400) / 6) + 3 * event
                      + 0.05 * rng.standard_normal(400)}, index=index)
    return y, pd.DataFrame({"event": event}, index=index)


def _holdout_error(forecaster, y, X) -> float:
    """Mean squared error of 6-step forecasts from 300, 306, ..., 384 (update, no refit)."""
    errors = []
    for cutoff in range(300, 390, 6):
        if cutoff > 300:
            forecaster.update(y[cutoff - 6:cutoff],
                              X=None if X is None else X[cutoff - 6:cutoff], update_params=False)
        prediction = forecaster.predict(fh=FH, X=None if X is None else X[cutoff:cutoff + 6])
        errors.append(float(((prediction.values - y[cutoff:cutoff + 6].values) ** 2).mean()))
    return float(np.mean(errors))


def test_a_known_future_event_in_X_halves_the_error(event_data):
    y, X = event_data
    # the uniform patcher: the covariate path is the same for every patcher, at half the cost
    settings = dict(input_chunk_length=24, compression_rate=4, d_model=32, n_epochs=10,
                    learning_rate=3e-3, patcher="uniform", random_state=0)
    without = ReinPatchForecaster(**settings).fit(y[:300], fh=FH)
    with_X = ReinPatchForecaster(**settings).fit(y[:300], X=X[:300], fh=FH)
    error_without = _holdout_error(without, y, None)
    error_with = _holdout_error(with_X, y, X)
    assert error_with <= 0.5 * error_without, (error_with, error_without)


def test_X_reaches_the_darts_model_as_the_chosen_covariates(event_data, make_forecaster):
    y, X = event_data
    future = make_forecaster(input_chunk_length=24).fit(y[:300], X=X[:300], fh=[1, 2])
    past = make_forecaster(input_chunk_length=24, covariates="past")
    past.fit(y[:300], X=X[:300], fh=[1, 2])
    assert future.get_fitted_params()["model"].uses_future_covariates
    assert not future.get_fitted_params()["model"].uses_past_covariates
    assert past.get_fitted_params()["model"].uses_past_covariates
    assert past.predict().shape == (2, 1)  # X ahead is not needed with past covariates


def test_X_at_some_steps_of_fh_only_is_enough(event_data, make_forecaster):
    y, X = event_data
    forecaster = make_forecaster(input_chunk_length=24).fit(y[:300], X=X[:300], fh=[2, 5])
    prediction = forecaster.predict(X=X.iloc[[301, 304]])
    assert list(prediction.index) == [y.index[301], y.index[304]]


def test_future_X_missing_at_predict_is_refused(event_data, make_forecaster):
    y, X = event_data
    forecaster = make_forecaster(input_chunk_length=24).fit(y[:300], X=X[:300], fh=[1, 2])
    with pytest.raises(ValueError, match="predict needs X"):
        forecaster.predict()


def test_nan_in_X_is_refused(event_data, make_forecaster):
    y, X = event_data
    broken = X[:300].copy()
    broken.iloc[100, 0] = np.nan
    with pytest.raises(ValueError, match=r"X contains 1 NaN value in column\(s\) .* \(first at "):
        make_forecaster(input_chunk_length=24).fit(y[:300], X=broken, fh=[1, 2])


def test_bad_covariates_argument_is_refused():
    with pytest.raises(ValueError, match="covariates must be 'future'"):
        ReinPatchForecaster(covariates="both")


def test_panel_X_per_instance(make_forecaster):
    rng = np.random.default_rng(2)
    index = pd.MultiIndex.from_product([["a", "b"], pd.RangeIndex(120)],
                                       names=["instance", "time"])
    y = pd.DataFrame({"y": rng.standard_normal(240)}, index=index)
    X = pd.DataFrame({"x": rng.standard_normal(240)}, index=index)
    forecaster = make_forecaster(input_chunk_length=24).fit(y.loc[(slice(None), slice(0, 99)), :],
                                                            X=X.loc[(slice(None), slice(0, 99)), :],
                                                            fh=[1, 2])
    prediction = forecaster.predict(X=X.loc[(slice(None), slice(100, 101)), :])
    assert prediction.shape == (4, 1)
