"""``fit`` and ``predict`` with ``--past-covariates`` and ``--future-covariates`` (issue 17).

The CSV file holds the target, its covariates and, for predict, the known future: rows at the
end whose target cells are empty and whose future covariates are filled. Every bad input gives
exit code 1 (2 for a bad argument) and one line on stderr, never a traceback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest

cli = pytest.importorskip("reinpatch_forecast.cli")

LOOKBACK, HORIZON = 24, 6
TINY_FIT = ["--lookback", str(LOOKBACK), "--horizon", str(HORIZON), "--compression-rate", "4",
            "--group-size", "2", "--d-model", "8", "--n-heads", "1", "--n-layers", "1",
            "--epochs", "1", "--batch-size", "16", "--quiet"]
ROWS, FUTURE = 120, 12  # rows with a target, then rows of known future
START = pd.Timestamp("2024-01-01")
COVARIATES = ["--past-covariates", "temp", "--future-covariates", "event,hour"]


def frame(rows: int = ROWS, future: int = FUTURE) -> pd.DataFrame:
    """An hourly load driven by a known event, a measured temperature and the hour of day;
    the last ``future`` rows have no load."""
    longest = 1000  # one draw of the noise, so that every file agrees on its rows
    t = np.arange(longest)
    rng = np.random.default_rng(0)
    event = (rng.random(longest) < 0.1).astype(float)
    data = pd.DataFrame({
        "date": pd.date_range(START, periods=longest, freq="h"),
        "load": np.sin(2 * np.pi * t / 24) + 2 * event + 0.1 * rng.standard_normal(longest),
        "temp": np.cos(2 * np.pi * t / 12),
        "event": event,
        "hour": (t % 24) / 23,
        "note": ["x"] * longest,
    }).iloc[:rows + future].copy()
    data.loc[rows:, "load"] = np.nan
    return data


def write(data: pd.DataFrame, path: Path) -> str:
    data.to_csv(path, index=False)
    return str(path)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, str]:
    """A model trained with past and future covariates, and one trained without."""
    folder = tmp_path_factory.mktemp("cli_covariates")
    csv = write(frame(), folder / "train.csv")
    plain_csv = write(frame(future=0), folder / "plain.csv")
    with_covariates, without = str(folder / "covariates.pt"), str(folder / "plain.pt")
    assert cli.main(["fit", "--csv", csv, "--target", "load", "--out", with_covariates,
                     *COVARIATES, *TINY_FIT]) == 0
    assert cli.main(["fit", "--csv", plain_csv, "--target", "load", "--out", without,
                     *TINY_FIT]) == 0
    return {"covariates": with_covariates, "plain": without}


def predict(model: str, data: pd.DataFrame, tmp_path: Path, *options: str) -> int:
    csv = write(data, tmp_path / "history.csv")
    return cli.main(["predict", "--model", model, "--csv", csv, "--out",
                     str(tmp_path / "forecast.csv"), "--quiet", *options])


def forecast(tmp_path: Path) -> pd.DataFrame:
    return pd.read_csv(tmp_path / "forecast.csv", parse_dates=["date"])


# -- what works ----------------------------------------------------------------------------


def test_fit_records_the_covariate_columns(models, capsys):
    from reinpatch_forecast.darts import ReinPatchModel

    model = ReinPatchModel.load(models["covariates"])
    assert list(model.past_covariate_series.components) == ["temp"]
    assert list(model.future_covariate_series.components) == ["event", "hour"]
    config = model.model.network.config
    # the lookback reads temp and the history of event and hour; the horizon event and hour
    assert (config.n_past_covariates, config.n_future_covariates) == (3, 2)
    # the target series ends at the last row with a load: the rows after it are not trained on
    assert len(model.training_series) == ROWS


def test_fit_says_which_covariates_it_used(tmp_path, capsys):
    csv = write(frame(), tmp_path / "train.csv")
    assert cli.main(["fit", "--csv", csv, "--target", "load", "--out", str(tmp_path / "m.pt"),
                     *COVARIATES, *TINY_FIT]) == 0
    printed = capsys.readouterr().out
    assert f"trained on {ROWS} rows" in printed
    assert "with past covariates temp and future covariates event, hour" in printed


def test_predict_starts_at_the_first_row_without_a_target(models, tmp_path, capsys):
    assert predict(models["covariates"], frame(), tmp_path) == 0
    assert "with past covariates temp and future covariates event, hour" in \
        capsys.readouterr().out
    result = forecast(tmp_path)
    assert list(result.columns) == ["date", "load"]
    assert len(result) == HORIZON
    assert result["date"].iloc[0] == START + pd.Timedelta(hours=ROWS)
    assert np.isfinite(result["load"]).all()


def test_predict_defaults_to_the_models_covariates(models, tmp_path):
    assert predict(models["covariates"], frame(), tmp_path) == 0
    default = forecast(tmp_path)["load"].to_numpy()
    assert predict(models["covariates"], frame(), tmp_path, *COVARIATES) == 0
    np.testing.assert_array_equal(forecast(tmp_path)["load"].to_numpy(), default)


def test_predict_reads_the_known_future(models, tmp_path):
    assert predict(models["covariates"], frame(), tmp_path) == 0
    before = forecast(tmp_path)["load"].to_numpy()
    other = frame()
    other.loc[ROWS:, "event"] = 1 - other.loc[ROWS:, "event"]
    assert predict(models["covariates"], other, tmp_path) == 0
    assert not np.allclose(forecast(tmp_path)["load"].to_numpy(), before)


def test_fewer_steps_than_the_horizon_need_only_their_rows(models, tmp_path):
    assert predict(models["covariates"], frame(), tmp_path) == 0
    whole = forecast(tmp_path)["load"].to_numpy()
    # two rows of known future are enough for --n 2, and give the same first two steps
    assert predict(models["covariates"], frame(future=2), tmp_path, "--n", "2") == 0
    np.testing.assert_allclose(forecast(tmp_path)["load"].to_numpy(), whole[:2], rtol=1e-6)


def test_more_steps_than_the_horizon_read_past_covariates_of_the_future_rows(models, tmp_path):
    assert predict(models["covariates"], frame(), tmp_path, "--n", str(FUTURE)) == 0
    assert len(forecast(tmp_path)) == FUTURE


def test_past_covariates_are_needed_only_over_the_lookback(models, tmp_path):
    data = frame()
    data.loc[:ROWS - LOOKBACK - 1, "temp"] = np.nan  # empty before the last window
    assert predict(models["covariates"], data, tmp_path) == 0


def test_segment_reads_a_file_with_known_future_rows(models, tmp_path, capsys):
    csv = write(frame()[["date", "load"]], tmp_path / "history.csv")  # covariates not needed
    out = tmp_path / "patches.png"
    assert cli.main(["segment", "--model", models["covariates"], "--csv", csv, "--out",
                     str(out), "--quiet"]) == 0
    assert out.is_file()


# -- errors --------------------------------------------------------------------------------


@dataclass
class Case:
    id: str
    args: Callable[[Path, dict], list[str]]  # (tmp_path, models) -> argv
    code: int
    stderr: str  # regex


def fit_with(options: list[str], change: Callable[[pd.DataFrame], None] | None = None):
    def args(tmp: Path, models: dict) -> list[str]:
        data = frame()
        if change is not None:
            change(data)
        csv = write(data, tmp / "data.csv")
        return ["fit", "--csv", csv, "--target", "load", "--out", str(tmp / "m.pt"),
                *options, *TINY_FIT]
    return args


def predict_with(model: str, options: tuple[str, ...] = (), rows: int = ROWS,
                 future: int = FUTURE, change: Callable[[pd.DataFrame], None] | None = None):
    def args(tmp: Path, models: dict) -> list[str]:
        data = frame(rows, future)
        if change is not None:
            change(data)
        csv = write(data, tmp / "history.csv")
        return ["predict", "--model", models[model], "--csv", csv, "--out",
                str(tmp / "forecast.csv"), "--quiet", *options]
    return args


def set_value(column: str, row: int, value=np.nan):
    def change(data: pd.DataFrame) -> None:
        data.loc[row, column] = value
    return change


def words(column: str):
    def change(data: pd.DataFrame) -> None:
        data[column] = ["warm"] * len(data)
    return change


def drop(*columns: str):
    def change(data: pd.DataFrame) -> None:
        data.drop(columns=list(columns), inplace=True)
    return change


CASES = [
    Case("fit_covariate_column_missing", fit_with(["--past-covariates", "temp,wind"]), 1,
         r"--past-covariates column\(s\) 'wind' not in .*data\.csv \(columns: date, load"),
    Case("fit_covariate_column_not_numeric", fit_with(["--future-covariates", "note"]), 1,
         r"data\.csv has non-numeric column\(s\) 'note' \(str\)\. Every column must hold "
         r"numbers \(booleans count as 0 / 1\): convert them to numbers"),
    Case("fit_nan_in_past_covariates", fit_with(["--past-covariates", "temp"],
                                                set_value("temp", 40)), 1,
         r"The past covariates of .*data\.csv over the rows fit needs \(2024-01-01 00:00:00 to "
         r"2024-01-05 23:00:00\) contains 1 NaN value in column\(s\) 'temp' \(first at "
         r"2024-01-02 16:00:00\)\. Fill the empty cells and replace infinite values\.$"),
    Case("fit_inf_in_future_covariates", fit_with(["--future-covariates", "event"],
                                                  set_value("event", 3, np.inf)), 1,
         r"The future covariates of .* contains 1 infinite value in column\(s\) 'event' "
         r"\(first at 2024-01-01 03:00:00\)"),
    Case("fit_target_as_covariate", fit_with(["--past-covariates", "load"]), 1,
         r"'load' named both as a target and as a covariate"),
    Case("fit_column_as_past_and_future", fit_with(["--past-covariates", "temp",
                                                    "--future-covariates", "temp,hour"]), 1,
         r"'temp' named both as past and as future covariates"),
    Case("fit_empty_column_name", fit_with(["--past-covariates", "temp,"]), 2,
         r"--past-covariates: expected comma-separated column names"),
    Case("fit_empty_target_inside_the_series", fit_with(COVARIATES, set_value("load", 50)), 1,
         r"data\.csv contains 1 NaN value in column\(s\) 'load' \(first at 2024-01-03 "
         r"02:00:00\)\. Fill the empty cells of the target columns"),
    Case("predict_too_few_future_rows", predict_with("covariates", future=4), 1,
         r"the forecast of 6 step\(s\) needs the future covariates \('event', 'hour'\) in the "
         r"6 row\(s\) after the last target row \(2024-01-05 23:00:00\), but .* has 4"),
    Case("predict_no_future_rows", predict_with("covariates", ("--n", "3"), future=0), 1,
         r"needs the future covariates .* in the 3 row\(s\) after the last target row .* has 0"),
    Case("predict_nan_in_known_future", predict_with("covariates",
                                                     change=set_value("hour", ROWS + 2)), 1,
         r"The future covariates of .*history\.csv over the rows the forecast of 6 step\(s\) "
         r"needs .* contains 1 NaN value in column\(s\) 'hour' \(first at 2024-01-06 "
         r"02:00:00\)\. .* in the rows of known future"),
    Case("predict_nan_in_past_covariates_of_the_lookback",
         predict_with("covariates", change=set_value("temp", ROWS - 1)), 1,
         r"The past covariates of .* contains 1 NaN value in column\(s\) 'temp' \(first at "
         r"2024-01-05 23:00:00\)\. Fill the empty cells and replace infinite values\.$"),
    Case("predict_beyond_the_horizon_without_past_covariates_there",
         predict_with("covariates", ("--n", "8"), change=set_value("temp", slice(ROWS, None))),
         1,
         r"contains 2 NaN values in column\(s\) 'temp' \(first at 2024-01-06 00:00:00\)\. "
         r".* in the rows of known future \(after the last target row\), or forecast at most "
         r"the model's horizon \(--n 6\)"),
    Case("predict_beyond_the_horizon_with_too_few_rows",
         predict_with("covariates", ("--n", "8"), future=1), 1,
         r"needs the past covariates \('temp'\) in the 2 row\(s\) after the last target row "
         r".* has 1: .* or forecast at most the model's horizon \(--n 6\)"),
    Case("predict_covariates_for_a_model_without", predict_with(
        "plain", ("--past-covariates", "temp"), future=0), 1,
         r"the model was trained without past covariates: drop --past-covariates"),
    Case("predict_future_covariates_for_a_model_without", predict_with(
        "plain", ("--future-covariates", "event"), future=0), 1,
         r"the model was trained without future covariates: drop --future-covariates"),
    Case("predict_without_the_models_covariate_columns",
         predict_with("covariates", change=drop("temp")), 1,
         r"the model's past covariate column\(s\) 'temp' not in .*history\.csv"),
    Case("predict_other_covariate_columns",
         predict_with("covariates", ("--future-covariates", "hour,event")), 1,
         r"trained with the future covariates 'event', 'hour', not 'hour', 'event': give "
         r"--future-covariates event,hour"),
    Case("predict_non_numeric_covariate_column",
         predict_with("covariates", change=words("temp")), 1,
         r"history\.csv has non-numeric column\(s\) 'temp' \(str\)\. Every column must hold "
         r"numbers"),
    Case("predict_known_future_rows_with_a_model_without_covariates",
         predict_with("plain"), 1, r"history\.csv contains 12 NaN values in column\(s\) "
         r"'load' \(first at 2024-01-06 00:00:00\)\. Fill the empty cells of the target"),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_covariate_input(case: Case, models: dict, tmp_path: Path, capsys):
    code = cli.main(case.args(tmp_path, models))
    err = capsys.readouterr().err
    assert code == case.code, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert re.search(case.stderr, err), err
