"""The benchmark data: event-rich files and their covariates (train-only scalers), ETT's oil
temperature with loads and calendar, the original-scale MAE, the seasonal naive baseline and
the statistics of decoded patches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reinpatch_forecast.data import load_ltsf_frame

import _data
from _protocol import (baseline_predict_fn, evaluate_windows, patch_statistics,
                       seasonal_naive_forecast)

DATA = _data.DEFAULT_DATA
#: Rows of each file and its 70/10/20 split (target rows): the data README's rule.
ROWS = {"EPF_FR_BE": (16080, 11256, 1608, 3216), "vic_elec": (52608, 36825, 5262, 10521)}
LOOKBACKS = {"EPF_FR_BE": 168, "vic_elec": 336}
needs_data = pytest.mark.skipif(not (Path(DATA) / "EPF_FR_BE.csv.gz").is_file()
                                or not (Path(DATA) / "vic_elec.csv.gz").is_file(),
                                reason="the event datasets are not in shared/data")


@pytest.fixture(scope="module")
def loaded():
    return {d: _data.event_data(d, LOOKBACKS[d], 24, DATA) for d in ROWS}


@needs_data
@pytest.mark.parametrize("dataset", ["EPF_FR_BE", "vic_elec"])
def test_event_splits_follow_the_readme_and_covariates_cover_every_row(loaded, dataset):
    data = loaded[dataset]
    n, n_train, n_val, n_test = ROWS[dataset]
    lookback = LOOKBACKS[dataset]
    rows = {name: len(series) for name, series in data.target.items()}
    assert rows == {"train": n_train, "val": n_val + lookback, "test": n_test + lookback}
    for series in data.covariates("covariates").values():
        assert len(series) == n
        assert series.slice_intersect(data.target["test"]).time_index.equals(
            data.target["test"].time_index)
    # the train-only scaler: training rows standardised, test rows not
    assert np.allclose(data.arrays["train"].mean(axis=0), 0.0, atol=1e-4)
    assert np.allclose(data.arrays["train"].std(axis=0), 1.0, atol=1e-3)
    assert not np.allclose(data.arrays["test"][lookback:].mean(axis=0), 0.0, atol=1e-3)


@needs_data
def test_event_covariate_roles_and_the_local_calendar(loaded):
    epf, vic = loaded["EPF_FR_BE"], loaded["vic_elec"]
    assert set(epf.covariates("covariates")) == {"future_covariates"}
    assert epf.covariates("covariates")["future_covariates"].components.tolist() == [
        "gen_forecast", "system_load"]
    found = vic.covariates("covariates")
    assert found["past_covariates"].components.tolist() == ["temperature"]
    assert found["future_covariates"].components.tolist() == [
        "holiday", "hour", "day_of_week", "month"]
    # 2011-12-31 13:00 UTC is midnight of Sunday 1 January 2012 in Melbourne (a holiday)
    first = found["future_covariates"][0].values()[0]
    assert first[1:].tolist() == [0.0, 1.0, 0.0] and first[0] > 0
    assert epf.covariates("target") == {}


def test_original_scale_mae_equals_the_inverse_transformed_errors():
    from reinpatch_forecast.data import prepare_ltsf, sliding_windows

    assert _data.original_scale_mae([0.5, 0.2], [20.0, 10.0]) == pytest.approx(6.0)
    with pytest.raises(ValueError, match="2 channel MAEs for a scaler of 1"):
        _data.original_scale_mae([0.5, 0.2], [20.0])
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": 40 + 20 * rng.standard_normal(400),
                          "b": 35 + 5 * rng.standard_normal(400)},
                         index=pd.date_range("2015-01-01", periods=400, freq="h"))
    splits = prepare_ltsf(frame, "custom", 24, 6)
    predict = baseline_predict_fn("naive", 6, {"K": 24})
    scores = evaluate_windows(predict, splits.test, 24, 6)
    x, y = sliding_windows(splits.test, 24, 6)
    direct = np.abs(splits.inverse_transform(predict(x)) - splits.inverse_transform(y))
    found = _data.original_scale_mae(scores["mae_per_channel"], splits.std)
    assert found == pytest.approx(float(direct.mean()), rel=1e-6)


def test_seasonal_naive_repeats_the_last_season():
    x = np.arange(10, dtype=np.float32).reshape(1, 10, 1)
    assert seasonal_naive_forecast(x, 7, 3)[0, :, 0].tolist() == [7, 8, 9, 7, 8, 9, 7]
    with pytest.raises(ValueError, match="longer than the lookback"):
        seasonal_naive_forecast(x, 7, 11)


def test_patch_statistics_of_the_grid_a_skewed_patching_and_an_at_most_budget():
    assert patch_statistics(np.array([[0, 8, 16, 24]]), 32) == {
        "first_length": 8.0, "last_length": 8.0, "one_step_share": 0.0, "length_std": 0.0,
        "grid_distance": 0.0, "tokens_used": 4.0}
    skewed = patch_statistics(np.array([[[0, 20, 21, 22]], [[0, 8, 16, 24]]]), 32)
    assert skewed["first_length"] == pytest.approx((20 + 8) / 2)
    assert skewed["last_length"] == pytest.approx((10 + 8) / 2)
    assert skewed["one_step_share"] == pytest.approx(2 / 8)
    assert skewed["grid_distance"] == pytest.approx((0 + 12 + 5 + 2) / 8)
    fewer = patch_statistics(np.array([[0, 16, 32, 32], [0, 8, 16, 24]]), 32)
    assert fewer["tokens_used"] == pytest.approx(3.0)
    assert fewer["grid_distance"] == pytest.approx(0.0)  # [0, 16]: the grid of two patches


@needs_data
def test_load_splits_keeps_event_targets():
    splits = _data.load_splits("EPF_FR_BE", 168, 24, DATA)
    assert splits.columns == ("BE_price", "FR_price")
    assert splits.train.shape[1] == splits.val.shape[1] == splits.test.shape[1] == 2
    assert splits.train.shape[0] == ROWS["EPF_FR_BE"][1]
    assert _data.load_splits("vic_elec", 96, 96, DATA).columns == ("demand",)


@pytest.mark.skipif(not (Path(DATA) / "ETTh1.csv.gz").is_file(),
                    reason="ETTh1 is not in shared/data")
def test_load_splits_keeps_every_ltsf_column():
    splits = _data.load_splits("ETTh1", 96, 96, DATA)
    assert splits.columns == tuple(load_ltsf_frame("ETTh1", data_dir=DATA).columns)
    assert splits.train.shape[1] == 7
