"""Tests of reinpatch_forecast.data: loading, the standard LTSF split, windows.

The tests that need the real datasets read them from ``<repo>/../shared/data`` (passed as
``data_dir``; the package itself never looks there) and are skipped when that folder is absent.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reinpatch_forecast import data as ds
from reinpatch_forecast.data import (
    DATA_DIR_ENV_VAR,
    EVENT_DATASETS,
    LTSF_DATASETS,
    EventDataset,
    LTSF_HORIZONS,
    load_bundled_etth1,
    load_ltsf_frame,
    prepare_ltsf,
    sliding_windows,
    split_borders,
)

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
L = 96

# README table: rows, n_train / n_val / n_test (target rows), test windows for H = 96..720.
EXPECTED = {
    "ETTh1": (17420, (8640, 2880, 2880), (2785, 2689, 2545, 2161)),
    "ETTh2": (17420, (8640, 2880, 2880), (2785, 2689, 2545, 2161)),
    "ETTm1": (69680, (34560, 11520, 11520), (11425, 11329, 11185, 10801)),
    "ETTm2": (69680, (34560, 11520, 11520), (11425, 11329, 11185, 10801)),
    "weather": (52696, (36887, 5270, 10539), (10444, 10348, 10204, 9820)),
}

# shared/data/README.md, "Event-rich series": rows, numeric columns, first and last date (naive
# UTC for vic_elec), n_train / n_val / n_test of the 70/10/20 rule.
EVENT_EXPECTED = {
    "EPF_FR_BE": (16080, 4, "2015-01-01 00:00", "2016-10-31 23:00", (11256, 1608, 3216)),
    "vic_elec": (52608, 3, "2011-12-31 13:00", "2014-12-31 12:30", (36825, 5262, 10521)),
}


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not (SHARED_DATA / "ETTh1.csv.gz").is_file():
        pytest.skip(f"LTSF data folder {SHARED_DATA} is absent (needs shared/data beside the repo)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def frames(data_dir: Path) -> dict[str, pd.DataFrame]:
    return {name: load_ltsf_frame(name, data_dir=data_dir) for name in EXPECTED}


@pytest.fixture(scope="session")
def event_frames() -> dict[str, pd.DataFrame]:
    missing = [n for n in EVENT_DATASETS if not (SHARED_DATA / f"{n}.csv.gz").is_file()]
    if missing:
        pytest.skip(f"Event-rich data {missing} absent from {SHARED_DATA}")
    return {name: load_ltsf_frame(name, data_dir=SHARED_DATA) for name in EVENT_DATASETS}


# --------------------------------------------------------------------------------------------
# Registry, borders, windows (no data needed)
# --------------------------------------------------------------------------------------------


def test_registry_families() -> None:
    assert dict(LTSF_DATASETS) == {
        "ETTh1": "ETTh",
        "ETTh2": "ETTh",
        "ETTm1": "ETTm",
        "ETTm2": "ETTm",
        "weather": "custom",
        "EPF_FR_BE": "custom",
        "vic_elec": "custom",
    }
    assert set(EXPECTED) | set(EVENT_DATASETS) == set(LTSF_DATASETS)
    assert ds.split_family("etth1") == "ETTh"
    assert ds.split_family("VIC_ELEC") == "custom"
    assert ds.split_family("custom") == "custom"
    with pytest.raises(ValueError, match="Unknown dataset or split family 'ECL'"):
        ds.split_family("ECL")


@pytest.mark.parametrize("lookback", [96, 336, 512])
def test_split_borders_exact(lookback: int) -> None:
    assert split_borders("ETTh1", 17420, lookback) == {
        "train": (0, 8640),
        "val": (8640 - lookback, 11520),
        "test": (11520 - lookback, 14400),
    }
    assert split_borders("ETTm", 69680, lookback) == {
        "train": (0, 34560),
        "val": (34560 - lookback, 46080),
        "test": (46080 - lookback, 57600),
    }
    assert split_borders("weather", 52696, lookback) == {
        "train": (0, 36887),
        "val": (36887 - lookback, 36887 + 5270),
        "test": (52696 - 10539 - lookback, 52696),
    }
    # The absent custom datasets of the README table.
    assert split_borders("custom", 26304, lookback)["test"] == (26304 - 5260 - lookback, 26304)
    assert split_borders("custom", 17544, lookback)["val"] == (12280 - lookback, 12280 + 1756)


def test_event_registry() -> None:
    assert {"EVENT_DATASETS", "EventDataset"} <= set(ds.__all__)
    assert EVENT_DATASETS["EPF_FR_BE"] == EventDataset(
        name="EPF_FR_BE",
        step="1h",
        target_columns=("BE_price", "FR_price"),
        future_covariates=("gen_forecast", "system_load"),
        past_covariates=(),
    )
    vic = EVENT_DATASETS["vic_elec"]
    assert (vic.step, vic.target_columns) == ("30min", ("demand",))
    assert (vic.future_covariates, vic.past_covariates) == (("holiday",), ("temperature",))
    assert vic.covariates == ("holiday", "temperature")
    for name, event in EVENT_DATASETS.items():
        assert event.name == name and LTSF_DATASETS[name] == "custom"
        assert pd.Timedelta(event.step) > pd.Timedelta(0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        vic.step = "1h"  # type: ignore[misc]
    # Lists become tuples; bad roles are refused with what to do.
    assert EventDataset("x", "1h", ["a"], ["b"]).target_columns == ("a",)
    with pytest.raises(ValueError, match="at least one target column"):
        EventDataset("x", "1h", ())
    with pytest.raises(ValueError, match=r"\['a'\] are named more than once"):
        EventDataset("x", "1h", ("a",), past_covariates=("a",))
    with pytest.raises(ValueError, match=r"write \('demand',\)"):
        EventDataset("x", "1h", "demand")


def test_split_borders_errors() -> None:
    with pytest.raises(ValueError, match="needs at least 14400 rows"):
        split_borders("ETTh", 14399, 96)
    with pytest.raises(ValueError, match="longer than the training part"):
        split_borders("custom", 100, 71)
    with pytest.raises(ValueError, match="lookback must be >= 1"):
        split_borders("ETTh", 17420, 0)


def test_sliding_windows_views_and_values() -> None:
    array = np.arange(20 * 3, dtype=np.float32).reshape(20, 3)
    x, y = sliding_windows(array, 5, 4)
    assert x.shape == (20 - 5 - 4 + 1, 5, 3)
    assert y.shape == (12, 4, 3)
    assert np.shares_memory(x, array) and np.shares_memory(y, array)
    for i in (0, 7, 11):
        np.testing.assert_array_equal(x[i], array[i : i + 5])
        np.testing.assert_array_equal(y[i], array[i + 5 : i + 9])
    x1, y1 = sliding_windows(array, 10, 10)
    assert x1.shape == (1, 10, 3) and y1.shape == (1, 10, 3)
    with pytest.raises(ValueError, match="no window"):
        sliding_windows(array, 10, 11)
    with pytest.raises(ValueError, match=r"shape \(T, C\)"):
        sliding_windows(array[:, 0], 2, 2)


# --------------------------------------------------------------------------------------------
# Loading errors (tmp_path CSVs)
# --------------------------------------------------------------------------------------------


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_load_plain_csv_and_env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "toy.csv", "date,a,OT\n2020-01-01 00:00,1,2.5\n2020-01-01 01:00,3,4\n")
    monkeypatch.setenv(DATA_DIR_ENV_VAR, str(tmp_path))
    frame = load_ltsf_frame("toy")
    assert list(frame.columns) == ["a", "OT"]
    assert isinstance(frame.index, pd.DatetimeIndex) and frame.index.name == "date"
    assert frame.index[1] == pd.Timestamp("2020-01-01 01:00")
    assert (frame.dtypes == np.float64).all()
    pd.testing.assert_frame_equal(load_ltsf_frame(tmp_path / "toy.csv"), frame)


def test_load_missing_file_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_DIR_ENV_VAR, raising=False)
    with pytest.raises(FileNotFoundError, match=f"data_dir.*{DATA_DIR_ENV_VAR}"):
        load_ltsf_frame("ETTh1")
    with pytest.raises(FileNotFoundError, match=r"'ETTh1.csv.gz' and 'ETTh1.csv'"):
        load_ltsf_frame("ETTh1", data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="LTSF CSV file not found"):
        load_ltsf_frame(tmp_path / "nope.csv")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_ltsf_frame("ETTh1", data_dir=tmp_path / "no_such_folder")
    monkeypatch.setenv(DATA_DIR_ENV_VAR, str(tmp_path))
    with pytest.raises(FileNotFoundError, match=f"environment variable {DATA_DIR_ENV_VAR}"):
        load_ltsf_frame("ETTh1")


def test_load_utc_dates_and_integer_flags(tmp_path: Path) -> None:
    # vic_elec's layout: ISO dates with a trailing Z, a 0/1 integer column.
    path = _write(
        tmp_path / "z.csv",
        "date,temperature,holiday,demand\n2011-12-31T13:00:00Z,21.4,1,4382.8\n"
        "2011-12-31T13:30:00Z,21.05,0,4263.4\n",
    )
    frame = load_ltsf_frame(path)
    assert isinstance(frame.index, pd.DatetimeIndex) and frame.index.tz is None
    assert frame.index.name == "date"
    assert list(frame.index) == [pd.Timestamp("2011-12-31 13:00"),
                                 pd.Timestamp("2011-12-31 13:30")]
    assert (frame.dtypes == np.float64).all()
    assert frame["holiday"].tolist() == [1.0, 0.0]
    # Another offset is converted to UTC; naive dates stay as written.
    path = _write(tmp_path / "o.csv", "date,a\n2012-01-01T00:00:00+10:00,1\n")
    assert load_ltsf_frame(path).index[0] == pd.Timestamp("2011-12-31 14:00")
    path = _write(tmp_path / "n.csv", "date,a\n2012-01-01 00:00:00,1\n")
    assert load_ltsf_frame(path).index[0] == pd.Timestamp("2012-01-01 00:00")


def test_load_missing_date_column(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.csv", "time,a\n2020-01-01,1\n")
    with pytest.raises(ValueError, match="no 'date' column"):
        load_ltsf_frame(path)


def test_load_non_numeric_column(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.csv", "date,a,b\n2020-01-01,1,x\n2020-01-02,2,y\n")
    with pytest.raises(ValueError, match=r"x\.csv' has non-numeric column\(s\) 'b' \(str\)\. "
                       r"Every column must hold numbers \(booleans count as 0 / 1\): convert "
                       r"them to numbers \(pd\.to_numeric\) or drop them\."):
        load_ltsf_frame(path)


def test_load_nan_cell(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.csv", "date,a,b\n2020-01-01,1,2\n2020-01-02,,3\n2020-01-03,NaN,4\n")
    with pytest.raises(ValueError, match=r"x\.csv' contains 2 NaN values in column\(s\) 'a' "
                       r"\(first at 2020-01-02 00:00:00\)\. Fill or drop the empty cells"):
        load_ltsf_frame(path)


def test_load_bad_dates(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.csv", "date,a\nnot a date,1\n")
    with pytest.raises(ValueError, match="Could not parse the 'date' column"):
        load_ltsf_frame(path)


def test_bundled_etth1_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.resources, "files", lambda package: tmp_path)
    with pytest.raises(FileNotFoundError, match="bundled ETTh1"):
        load_bundled_etth1()


def test_bundled_etth1_present(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, frames: dict[str, pd.DataFrame]
) -> None:
    shutil.copy(SHARED_DATA / "ETTh1.csv.gz", tmp_path / "ETTh1.csv.gz")
    monkeypatch.setattr(importlib.resources, "files", lambda package: tmp_path)
    pd.testing.assert_frame_equal(load_bundled_etth1(), frames["ETTh1"])


def test_bundled_etth1_in_this_installation(frames: dict[str, pd.DataFrame]) -> None:
    resource = importlib.resources.files("reinpatch_forecast.data") / "ETTh1.csv.gz"
    if not resource.is_file():
        with pytest.raises(FileNotFoundError, match="bundled ETTh1"):
            load_bundled_etth1()
    else:
        pd.testing.assert_frame_equal(load_bundled_etth1(), frames["ETTh1"])


# --------------------------------------------------------------------------------------------
# Real data: shapes, window counts, scaling
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(EXPECTED))
def test_frame_shapes_and_window_counts(name: str, frames: dict[str, pd.DataFrame]) -> None:
    frame = frames[name]
    n_rows, (n_train, n_val, n_test), test_windows = EXPECTED[name]
    assert frame.shape == (n_rows, 21 if name == "weather" else 7)
    assert frame.columns[-1] == "OT"
    for horizon, expected_test in zip(LTSF_HORIZONS, test_windows):
        splits = prepare_ltsf(frame, LTSF_DATASETS[name], L, horizon)
        assert splits.n_windows("test") == expected_test
        assert splits.n_windows("train") == n_train - L - horizon + 1
        assert splits.n_windows("val") == n_val - horizon + 1
        assert splits.train.shape == (n_train, frame.shape[1])
        assert splits.val.shape[0] == n_val + L and splits.test.shape[0] == n_test + L
        x, y = splits.windows("test")
        assert x.shape == (expected_test, L, frame.shape[1])
        assert y.shape == (expected_test, horizon, frame.shape[1])
        # The first test target starts at the val/test boundary; no target leaves the split.
        start, stop = splits.borders["test"]
        assert (start + L, stop) == (n_train + n_val, n_train + n_val + n_test)
        assert splits.dates["test"][L] == frame.index[n_train + n_val]
        assert stop - start == splits.test.shape[0]


def test_scaler_fitted_on_train_rows_only(frames: dict[str, pd.DataFrame]) -> None:
    frame = frames["ETTh1"]
    splits = prepare_ltsf(frame, "ETTh", L, 96)
    assert splits.train.dtype == splits.val.dtype == splits.test.dtype == np.float32
    assert splits.columns == tuple(frame.columns)
    train_rows = frame.to_numpy()[:8640]
    np.testing.assert_allclose(splits.mean, train_rows.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(splits.std, train_rows.std(axis=0, ddof=0), rtol=1e-12)
    np.testing.assert_allclose(splits.train.astype(np.float64).mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(splits.train.astype(np.float64).std(axis=0), 1.0, atol=1e-5)
    for other in (splits.val, splits.test):
        mean = other.astype(np.float64).mean(axis=0)
        std = other.astype(np.float64).std(axis=0)
        assert np.abs(mean).max() > 0.05 and np.abs(std - 1.0).max() > 0.05
    # The scaler is not the one of the whole series.
    assert not np.allclose(splits.mean, frame.to_numpy().mean(axis=0))
    # Round trip and the dates of each split.
    start, stop = splits.borders["val"]
    np.testing.assert_allclose(
        splits.inverse_transform(splits.val), frame.to_numpy()[start:stop], rtol=1e-5, atol=1e-4
    )
    assert splits.dates["val"].equals(frame.index[start:stop])


def test_prepare_univariate_and_errors(frames: dict[str, pd.DataFrame]) -> None:
    frame = frames["ETTh1"]
    uni = prepare_ltsf(frame, "ETTh1", L, 96, target_columns=["OT"])
    assert uni.columns == ("OT",) and uni.test.shape == (2880 + L, 1)
    full = prepare_ltsf(frame, "ETTh1", L, 96)
    np.testing.assert_array_equal(uni.test[:, 0], full.test[:, -1])
    with pytest.raises(ValueError, match="not in the frame"):
        prepare_ltsf(frame, "ETTh1", L, 96, target_columns=["nope"])
    with pytest.raises(ValueError, match="too short for one window"):
        prepare_ltsf(frame, "ETTh1", L, 2880 + 1)


# --------------------------------------------------------------------------------------------
# Real data: the event-rich series (EPF_FR_BE, vic_elec)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(EVENT_EXPECTED))
def test_event_frame_shapes_dates_and_columns(
    name: str, event_frames: dict[str, pd.DataFrame]
) -> None:
    frame = event_frames[name]
    event = EVENT_DATASETS[name]
    n_rows, n_cols, first, last, _ = EVENT_EXPECTED[name]
    assert frame.shape == (n_rows, n_cols)
    assert (frame.dtypes == np.float64).all()
    # Every column has one role, and the targets are the last columns.
    roles = event.target_columns + event.future_covariates + event.past_covariates
    assert sorted(roles) == sorted(frame.columns)
    assert tuple(frame.columns[-len(event.target_columns) :]) == event.target_columns
    # A naive, regular index at the registry's step.
    index = frame.index
    assert isinstance(index, pd.DatetimeIndex) and index.tz is None and index.name == "date"
    assert (index[0], index[-1]) == (pd.Timestamp(first), pd.Timestamp(last))
    assert index.is_unique and index.is_monotonic_increasing
    assert set(index[1:] - index[:-1]) == {pd.Timedelta(event.step)}
    assert pd.tseries.frequencies.to_offset(pd.infer_freq(index[:100])) == (
        pd.tseries.frequencies.to_offset(event.step)
    )
    assert not frame.isna().any().any()


def test_event_holiday_flag_is_numeric(event_frames: dict[str, pd.DataFrame]) -> None:
    holiday = event_frames["vic_elec"]["holiday"]
    assert holiday.dtype == np.float64
    assert set(holiday.unique()) == {0.0, 1.0}
    # 2012-01-01 (UTC 2011-12-31 13:00 is local midnight) is a holiday.
    assert holiday.iloc[0] == 1.0


@pytest.mark.parametrize(("name", "lookback", "horizon"), [("EPF_FR_BE", 168, 24),
                                                           ("vic_elec", 336, 48)])
def test_event_prepare_targets_borders_and_scaling(
    name: str, lookback: int, horizon: int, event_frames: dict[str, pd.DataFrame]
) -> None:
    frame = event_frames[name]
    targets = EVENT_DATASETS[name].target_columns
    n_rows, _, _, _, (n_train, n_val, n_test) = EVENT_EXPECTED[name]
    assert (n_train, n_val, n_test) == (
        int(0.7 * n_rows), n_rows - int(0.7 * n_rows) - int(0.2 * n_rows), int(0.2 * n_rows)
    )
    splits = prepare_ltsf(frame, LTSF_DATASETS[name], lookback, horizon, target_columns=targets)
    assert splits.family == "custom" and splits.columns == targets
    assert splits.borders == {
        "train": (0, n_train),
        "val": (n_train - lookback, n_train + n_val),
        "test": (n_rows - n_test - lookback, n_rows),
    }
    assert splits.train.shape == (n_train, len(targets))
    assert splits.val.shape == (n_val + lookback, len(targets))
    assert splits.test.shape == (n_test + lookback, len(targets))
    assert splits.n_windows("test") == n_test - horizon + 1
    assert splits.dates["test"][lookback] == frame.index[n_train + n_val]
    # The scaler is fitted on the training rows of the targets only.
    train_rows = frame[list(targets)].to_numpy()[:n_train]
    np.testing.assert_allclose(splits.mean, train_rows.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(splits.std, train_rows.std(axis=0, ddof=0), rtol=1e-12)
    np.testing.assert_allclose(splits.train.astype(np.float64).mean(axis=0), 0.0, atol=1e-4)
    np.testing.assert_allclose(splits.train.astype(np.float64).std(axis=0), 1.0, atol=1e-4)
    assert not np.allclose(splits.mean, frame[list(targets)].to_numpy().mean(axis=0))
    start, stop = splits.borders["test"]
    np.testing.assert_allclose(
        splits.inverse_transform(splits.test), frame[list(targets)].to_numpy()[start:stop],
        rtol=1e-5, atol=1e-2,
    )
