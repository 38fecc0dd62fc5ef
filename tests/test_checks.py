"""The input checks of :mod:`reinpatch_forecast.checks`, each rule once per face.

The same bad input (a NaN, an infinite value, a text column) goes through the darts model, the
sktime forecaster, the command line, the datasets and the pretraining corpus, and every face
answers with the same message; a boolean column is numbers (0 / 1) in every face.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from darts import TimeSeries
from support import TINY_DARTS, darts_model, sine_values
from support import sktime_forecaster as tiny_forecaster

from reinpatch_forecast import checks
from reinpatch_forecast.cli import main
from reinpatch_forecast.data import load_ltsf_frame, prepare_ltsf
from reinpatch_forecast.errors import NonNumericColumnsError, ReinPatchInputError
from reinpatch_forecast.foundation import pretrain_patcher

#: The message fragment of each rule, the same in every face.
FRAGMENT = {
    "nan": r"contains 1 NaN value( in column\(s\) '[^']+')? \(first at [^)]+\)\. ",
    "inf": r"contains 1 infinite value( in column\(s\) '[^']+')? \(first at [^)]+\)\. ",
    "text": r"has non-numeric column\(s\) '[^']+' \((str|object)\)\. Every column must hold "
            r"numbers \(booleans count as 0 / 1\): ",
}
TINY_CLI = ["--lookback", "12", "--horizon", "3", "--compression-rate", "3", "--group-size",
            "2", "--d-model", "8", "--n-heads", "1", "--n-layers", "1", "--epochs", "1",
            "--batch-size", "16", "--quiet"]
LENGTH = 60


def frame_with(kind: str) -> pd.DataFrame:
    """60 hourly rows: a target ``y`` with a NaN / an infinite value at row 50 (in the last
    12 rows, the window a forecast reads), or an extra ``flag`` (bool) / ``label`` (text)
    column."""
    frame = pd.DataFrame({"y": sine_values(LENGTH)},
                         index=pd.date_range("2020-01-01", periods=LENGTH, freq="h", name="date"))
    if kind in ("nan", "inf"):
        frame.iloc[50, 0] = np.nan if kind == "nan" else np.inf
    elif kind == "bool":
        frame["flag"] = [True, False, False] * (LENGTH // 3)
    elif kind == "text":
        frame["label"] = ["a", "b", "c"] * (LENGTH // 3)
    return frame


def raises(kind: str, run) -> None:
    """``run()`` raises the error of ``kind`` with the rule's message fragment."""
    error = NonNumericColumnsError if kind == "text" else ReinPatchInputError
    with pytest.raises(error, match=FRAGMENT[kind]):
        run()


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny darts model trained on the clean target."""
    model = darts_model(tmp_path_factory.mktemp("darts"), TINY_DARTS)
    return model.fit(TimeSeries.from_dataframe(frame_with("clean")))


# -- darts ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["nan", "inf"])
def test_darts_fit_predict_and_patch_boundaries_reject_bad_values(kind, trained, tmp_path):
    series = TimeSeries.from_dataframe(frame_with(kind))
    raises(kind, lambda: darts_model(tmp_path, TINY_DARTS).fit(series))
    raises(kind, lambda: trained.predict(3, series=series))
    raises(kind, lambda: trained.patch_boundaries(series))


def test_darts_reads_a_boolean_column_as_numbers(tmp_path):
    series = TimeSeries.from_dataframe(frame_with("bool"))
    model = darts_model(tmp_path, TINY_DARTS).fit(series)
    assert np.isfinite(model.predict(3, series=series).values()).all()
    assert model.patch_boundaries(series).starts.shape[0] == 2


def test_darts_never_sees_a_text_column():
    # a darts TimeSeries holds numbers only: darts refuses to build one from text
    with pytest.raises(ValueError, match="could not convert string to float"):
        TimeSeries.from_dataframe(frame_with("text"))


# -- sktime -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["nan", "inf", "text"])
def test_sktime_rejects_bad_y(kind):
    raises(kind, lambda: tiny_forecaster().fit(frame_with(kind), fh=[1, 2, 3]))


def test_sktime_reads_a_boolean_column_as_numbers():
    prediction = tiny_forecaster().fit(frame_with("bool"), fh=[1, 2, 3]).predict()
    assert np.isfinite(prediction.to_numpy()).all()


# -- command line -----------------------------------------------------------------------------


def cli_fit(kind: str, tmp_path: Path, capsys) -> tuple[int, str]:
    """``fit`` on a CSV of ``frame_with(kind)``; the extra column is a past covariate."""
    frame = frame_with(kind)
    csv = tmp_path / "data.csv"
    frame.to_csv(csv)
    extra = [c for c in frame.columns if c != "y"]
    code = main(["fit", "--csv", str(csv), "--target", "y", "--out", str(tmp_path / "m.pt"),
                 *(["--past-covariates", extra[0]] if extra else []), *TINY_CLI])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("kind", ["nan", "inf", "text"])
def test_cli_rejects_bad_columns(kind, tmp_path, capsys):
    code, error = cli_fit(kind, tmp_path, capsys)
    assert code == 1
    assert re.search(FRAGMENT[kind], error), error


def test_cli_reads_a_boolean_column_as_numbers(tmp_path, capsys):
    code, error = cli_fit("bool", tmp_path, capsys)
    assert code == 0, error


# -- datasets ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["nan", "inf", "text"])
def test_datasets_reject_bad_columns(kind, tmp_path):
    frame = frame_with(kind)
    frame.to_csv(tmp_path / "x.csv")
    raises(kind, lambda: load_ltsf_frame(tmp_path / "x.csv"))
    raises(kind, lambda: prepare_ltsf(frame, "custom", 4, 2))


def test_datasets_read_a_boolean_column_as_numbers(tmp_path):
    frame = frame_with("bool")
    frame.to_csv(tmp_path / "x.csv")
    loaded = load_ltsf_frame(tmp_path / "x.csv")
    assert loaded["flag"].dtype == np.float64
    np.testing.assert_array_equal(loaded["flag"].to_numpy()[:3], [1.0, 0.0, 0.0])
    splits = prepare_ltsf(frame, "custom", 4, 2)
    assert splits.columns == ("y", "flag") and np.isfinite(splits.train).all()


# -- pretraining corpus -----------------------------------------------------------------------


def pretrain(bad: pd.Series):
    corpus = {"clean": sine_values(160), "bad": bad}
    return pretrain_patcher(corpus, input_chunk_length=12, output_chunk_length=3,
                            compression_rate=3, group_size=2, n_epochs=1, batch_size=16,
                            max_windows_per_series=8, d_model=8, n_layers=1, hidden_size=8)


@pytest.mark.parametrize("kind", ["nan", "inf", "text"])
def test_pretraining_rejects_a_bad_corpus_series(kind):
    frame = frame_with(kind)
    raises(kind, lambda: pretrain(frame[frame.columns[-1]]))


def test_pretraining_reads_a_boolean_series_as_numbers():
    assert pretrain(frame_with("bool")["flag"]).n_series == 2


# -- the rules themselves ---------------------------------------------------------------------


def test_booleans_are_numbers_also_with_empty_cells():
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": [True, False], "c": ["x", "y"],
                          "d": pd.Series([True, None], dtype=object)})
    assert checks.non_numeric_columns(frame) == ["'c' (str)"]
    np.testing.assert_array_equal(checks.numeric_values(frame[["b", "d"]]),
                                  [[1.0, 1.0], [0.0, np.nan]])
    error = pytest.raises(NonNumericColumnsError, checks.check_numeric_columns, frame, "f").value
    assert isinstance(error, ValueError) and isinstance(error, TypeError)


def test_a_step_not_given_takes_the_last_known_values_before_it():
    values = np.array([[1.0, 10.0], [np.nan, np.nan], [3.0, 30.0]])
    np.testing.assert_array_equal(checks.pad_future_covariates(values, 5), [
        [1.0, 10.0], [1.0, 10.0], [3.0, 30.0], [3.0, 30.0], [3.0, 30.0]])


def test_the_finite_check_names_columns_and_takes_a_fix():
    values = np.array([[1.0, np.nan], [np.inf, np.nan]])
    with pytest.raises(ValueError, match=r"^x contains 2 NaN and 1 infinite values in column\(s\) "
                       r"'a', 'b' \(first at d0\)\. Do this\.$"):
        checks.check_finite_values(values, "x", ["d0", "d1"], columns=["a", "b"],
                                   fix="Do this.")
    checks.check_finite_values(np.array([[1e30]]), "x", limit=None)
    with pytest.raises(ValueError, match=r"has values up to 1e\+30 .* beyond 1e\+18"):
        checks.check_finite_values(np.array([[1e30]]), "x")


def test_an_untrained_model_is_refused_with_how_to_get_a_trained_one():
    checks.check_trained(True, "predict()")
    with pytest.raises(ReinPatchInputError,
                       match=r"not trained yet: call fit\(\) before predict\(\), or load a "
                             r"trained model with ReinPatchModel\.load\(path\)"):
        checks.check_trained(False, "predict()")
