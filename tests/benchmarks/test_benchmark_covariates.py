"""benchmarks/covariates.py: its data (the scaled loads and the calendar), its scoring (equal to
ltsf.py's without covariates, to darts' ``historical_forecasts`` with them), its plan, its
report, and one small end-to-end run of the script on generated data (resumed from its cache)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
COLUMNS = ["HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT"]
ROWS = 14400  # the ETTh split's rows
LOOKBACK, HORIZON = 24, 6
#: A small, quick budget (the script's own arguments).
TRAINING = ["--epochs", "1", "--max-train-windows", "32", "--d-model", "8", "--n-layers", "1",
            "--lookback", str(LOOKBACK), "--horizons", str(HORIZON)]


@pytest.fixture(scope="module")
def covariates():
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    import _common

    return _common.import_benchmark("covariates")


def _frame(rows: int = ROWS) -> pd.DataFrame:
    """An hourly ETT-like frame: OT follows the loads of the previous hour and the hour of day."""
    rng = np.random.default_rng(0)
    index = pd.date_range("2016-07-01", periods=rows, freq="h", name="date")
    loads = np.cumsum(rng.normal(size=(rows, 6)), axis=0) * 0.1
    daily = np.sin(2 * np.pi * index.hour.to_numpy() / 24)
    ot = np.roll(loads.sum(axis=1), 1) + daily + 0.1 * rng.normal(size=rows)
    return pd.DataFrame(np.column_stack([loads, ot]), index=index, columns=COLUMNS)


@pytest.fixture(scope="module")
def data(covariates):
    from reinpatch_forecast.data import prepare_ltsf

    splits = prepare_ltsf(_frame(), "ETTh1", LOOKBACK, HORIZON)
    return splits, covariates.covariate_data(splits)


def test_the_covariates_are_the_scaled_splits_columns_and_the_calendar(covariates, data):
    splits, found = data
    assert found.array("test").shape == (splits.test.shape[0], 1)
    assert np.array_equal(found.array("val"), splits.val[:, [6]])
    # the loads of the test rows are the test split's first six (train-scaled) columns
    test_rows = found.load.slice_intersect(found.target["test"]).values()
    assert np.array_equal(test_rows, splits.test[:, :6])
    assert len(found.load) == len(found.calendar) == ROWS
    calendar = found.calendar.values()
    assert calendar.min() == 0.0 and calendar.max() == 1.0
    assert found.calendar.components.tolist() == ["hour", "day_of_week", "month"]
    assert set(found.covariates("load+calendar")) == {"past_covariates", "future_covariates"}
    assert found.covariates("target") == {}


def test_scoring_equals_ltsf_and_historical_forecasts(covariates, data, tmp_path):
    _, found = data
    short = {name: series[-(LOOKBACK + HORIZON + 40):] if name != "train" else series
             for name, series in found.target.items()}  # 41 windows of val and test
    found = dataclasses.replace(found, target=short)
    training = {"epochs": 1, "batch_size": 32, "lr": 1e-3, "patience": 2, "d_model": 8,
                "n_layers": 1, "dropout": 0.1, "seed": 0, "max_train_windows": 32}
    rows = covariates.check_scoring(found, HORIZON, LOOKBACK, tmp_path, training)
    assert [row["setting"] for row in rows] == ["target", "load+calendar"]
    for row in rows:
        ours, darts = row["ours"], row["historical_forecasts"]
        assert ours["n_windows"] == darts["n_windows"] == 41
        assert ours["mse"] == pytest.approx(darts["mse"], rel=1e-6)
        assert ours["mae"] == pytest.approx(darts["mae"], rel=1e-6)
    ltsf = rows[0]["ltsf"]
    assert (rows[0]["ours"]["mse"], rows[0]["ours"]["mae"]) == (ltsf["mse"], ltsf["mae"])


def test_plan_keys_and_names(covariates):
    specs = covariates.make_plan([96, 336], list(covariates.SETTINGS), list(covariates.MODELS),
                                 96, {"epochs": 4, "seed": 0}, [0])
    assert len(specs) == 2 * (1 + 3 * (1 + 1 + 2 + 2))  # Repeat; learned, uniform, 2 lr x 2
    assert len({spec.key for spec in specs}) == len(specs)
    learned = next(s for s in specs if s.model == "learned")
    assert learned.params == {"R": 8, "G": 4, "policy": "density", "target": "OT",
                              "covariates": "target"}
    calendar = [s for s in specs if s.params.get("covariates") == "load+calendar"]
    assert all(s.params["calendar"] == covariates.CALENDAR_KEY for s in calendar)


def test_report_picks_the_peer_learning_rate_on_validation(covariates, tmp_path):
    training = {"epochs": 4, "seed": 0}
    specs = covariates.make_plan([96], ["load"], ["tsmixer", "uniform"], 96, training, [0])

    def record(spec, val, test):
        return {"key": spec.key, "spec": dataclasses.asdict(spec), "setting": "load",
                "val_mse": val, "val_mae": val, "test_mse": test, "test_mae": test,
                "epochs": 2, "train_seconds": 1.0, "commit": "abc", "date": "2026-12-03"}

    repeat, low_lr, high_lr, uniform = specs
    runs = [record(low_lr, 0.5, 0.40), record(high_lr, 0.4, 0.45), record(uniform, 0.3, 0.42)]
    rows = covariates.write_report(runs, tmp_path, training, "python benchmarks/covariates.py")
    tsmixer = next(r for r in rows if r["family"] == "tsmixer")
    assert (tsmixer["lr"], tsmixer["test_mse"]) == (high_lr.params["lr"], 0.45)
    text = (tmp_path / "covariates.md").read_text()
    assert "## H = 96" in text and "| **0.4200** | 0.4200 |" in text
    assert "0.4500 [0.0001] | 0.4500" in text


def test_the_script_runs_and_resumes_from_its_cache(covariates, tmp_path, monkeypatch):
    _frame().reset_index().to_csv(tmp_path / "ETTh1.csv", index=False)
    out = tmp_path / "out"
    argv = ["--data-dir", str(tmp_path), "--out-dir", str(out), "--models", "uniform",
            "--settings", "target", "load+calendar", *TRAINING]
    covariates.main(argv)
    records = [json.loads(line) for line in (out / "covariates_runs.jsonl").open()]
    assert [(r["spec"]["model"], r["setting"]) for r in records] == [
        ("repeat", "target"), ("uniform", "target"), ("uniform", "load+calendar")]
    assert all(r["test_windows"] == 2880 - HORIZON + 1 for r in records)
    assert all(np.isfinite(r["test_mse"]) for r in records)
    report = (out / "covariates.md").read_text()
    assert f"## H = {HORIZON}" in report and "ReinPatch uniform (R=8)" in report
    assert (out / "covariates.csv").read_text().count("\n") == 1 + 3

    def no_training(*args, **kwargs):
        raise AssertionError("a cached run was trained again")

    monkeypatch.setattr(covariates, "run_one", no_training)
    covariates.main(argv)  # everything is cached: nothing to train
