"""Bad inputs to the sktime face (issue #8, table 1): one parametrized test per row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest
from support import sine_values, sktime_series
from support import sktime_forecaster as tiny
from sktime.exceptions import NotFittedError

from reinpatch_forecast.patcher_io import save_patcher
from reinpatch_forecast.nn import LearnedPatcher


@dataclass
class Case:
    id: str
    run: Callable[[Any], Any]  # takes pytest's tmp_path
    raises: type[BaseException] | None = None
    match: str | None = None
    check: Callable[[Any], None] | None = None


def with_value(value, at: int = 10, length: int = 60) -> pd.Series:
    values = sine_values(length)
    values[at] = value
    return sktime_series(values)


def fit_predict(y, fh=(1, 2, 3), **params):
    return lambda tmp: tiny(**params).fit(y, fh=list(fh)).predict()


def finite(prediction) -> None:
    assert np.isfinite(prediction.to_numpy()).all(), prediction


def constant(value: float):
    def check(prediction) -> None:
        np.testing.assert_allclose(prediction.to_numpy(), value, rtol=1e-5, atol=1e-2)
    return check


def within(low: float, high: float):
    def check(prediction) -> None:
        values = prediction.to_numpy()
        width = high - low
        assert np.isfinite(values).all()
        assert (values > low - width).all() and (values < high + width).all(), values
    return check


def frame_with_text_column() -> pd.DataFrame:
    y = sktime_series(sine_values(60)).to_frame()
    y["label"] = ["a", "b", "c"] * 20
    return y


def frame_with_category_column() -> pd.DataFrame:
    y = sktime_series(sine_values(60)).to_frame()
    y["kind"] = pd.Categorical(["x", "y"] * 30)
    return y


def update_with_inf(tmp):
    forecaster = tiny().fit(sktime_series(sine_values(60)), fh=[1, 2, 3])
    new = sktime_series(sine_values(66))[-6:].copy()
    new.iloc[-1] = np.inf
    return forecaster.update(new, update_params=False).predict()


def pretrained_then_longer_fh(tmp):
    y = sktime_series(sine_values(60))
    panel = pd.concat({"a": y, "b": y * 2}, names=["instance", "time"]).to_frame()
    forecaster = tiny().pretrain(panel, fh=[1, 2, 3])
    return forecaster.fit(y, fh=[1, 2, 3, 4, 5])


def foreign_patcher_file(tmp):
    import torch

    path = tmp / "other.pt"
    torch.save({"weights": torch.zeros(3)}, path)
    return tiny(patcher=str(path)).fit(sktime_series(sine_values(60)), fh=[1, 2, 3])


def foundation_patcher_file(tmp):
    path = tmp / "patcher.pt"
    save_patcher(LearnedPatcher(hidden_size=8, n_layers=1), path)
    return tiny(patcher=str(path)).fit(sktime_series(sine_values(60)), fh=[1, 2, 3]).predict()


def patcher_with_another_policy(tmp):
    import torch

    from reinpatch_forecast.patcher_io import patcher_state

    state = patcher_state(LearnedPatcher(hidden_size=8, n_layers=1))
    state["config"]["policy"] = "offset"  # a patcher of the benchmarks' offset variant
    torch.save(state, tmp / "patcher.pt")
    forecaster = tiny(patcher=str(tmp / "patcher.pt"))
    return forecaster.fit(sktime_series(sine_values(60)), fh=[1, 2, 3])


def version_1_patcher_file(tmp):
    import torch

    from reinpatch_forecast.patcher_io import patcher_state

    state = patcher_state(LearnedPatcher(hidden_size=8, n_layers=1))
    state["version"] = 1
    state["config"] = {"hidden_size": 8, "n_layers": 1, "kernel_size": 3, "uniform_prior": 3.0}
    torch.save(state, tmp / "old.pt")
    return tiny(patcher=str(tmp / "old.pt")).fit(sktime_series(sine_values(60)), fh=[1, 2, 3])


FIX_GAPS = (r"ReinPatchForecaster needs complete, finite series: fill missing values first, e\.g\. "
            r"with sktime's Imputer .* and replace or clip infinite ones\.")
CASES = [
    # -- values ---------------------------------------------------------------------------------
    Case("nan_in_target", fit_predict(with_value(np.nan)), ValueError,
         r"y contains 1 NaN value in column\(s\) 'y' \(first at 2000-11\)\. " + FIX_GAPS),
    Case("inf_in_target", fit_predict(with_value(np.inf)), ValueError,
         r"The series contains 1 infinite value in column\(s\) 'y' \(first at 2000-11\)\. "
         + FIX_GAPS),
    Case("inf_in_the_window_after_update", update_with_inf, ValueError,
         r"The last 12 steps of the series \(the window the forecast reads\) contains 1 infinite "
         r"value in column\(s\) 'y' \(first at 2005-06\)"),
    Case("values_beyond_float32_squares", fit_predict(sktime_series(sine_values(60, 1e20))),
         ValueError, r"values up to .* beyond 1e\+18: .* Rescale the series"),
    Case("constant_series", fit_predict(sktime_series(np.full(60, 5.0))), check=constant(5.0)),
    Case("values_near_1e12", fit_predict(sktime_series(sine_values(60, 1e12, 5e12))),
         check=within(3.5e12, 6.5e12)),
    Case("values_near_1e-12", fit_predict(sktime_series(sine_values(60, 1e-12, 5e-12))),
         check=finite),
    Case("text_column", fit_predict(frame_with_text_column()), TypeError,
         r"y has non-numeric column\(s\) 'label' \(str\)\. Every column must hold numbers "
         r"\(booleans count as 0 / 1\): sktime treats them as categorical: convert them to "
         r"numbers .* or drop them"),
    Case("categorical_column", fit_predict(frame_with_category_column()), TypeError,
         r"y has non-numeric column\(s\) 'kind' \(category\)\. Every column must hold"),
    Case("boolean_column_is_numeric",
         fit_predict(sktime_series(sine_values(60)).to_frame().assign(flag=[True, False] * 30)),
         check=finite),
    # -- lengths and horizons -------------------------------------------------------------------
    Case("shorter_than_lookback_plus_horizon", fit_predict(sktime_series(sine_values(14))),
         ValueError, r"The series has 14 time steps, but training needs at least 15\. Pass a "
         r"longer series, or use a smaller input_chunk_length \(now 12\) or a shorter"),
    Case("empty_series", fit_predict(sktime_series(np.zeros(0))), ValueError,
         r"has 0 time steps, but training needs at least 15"),
    Case("horizon_longer_than_fitted",
         lambda tmp: tiny().fit(sktime_series(sine_values(60)), fh=[1, 2, 3]).predict(
             fh=[1, 2, 3, 4, 5]),
         ValueError, r"different forecasting horizon .* please re-fit the forecaster"),
    Case("horizon_longer_than_pretrained", pretrained_then_longer_fh, ValueError,
         r"fh reaches 5 steps ahead, but the pretrained network forecasts 3 steps"),
    Case("in_sample_horizon",
         lambda tmp: tiny().fit(sktime_series(sine_values(60)), fh=[0, 1]),
         NotImplementedError, r"can not perform in-sample prediction"),
    # -- parameters -----------------------------------------------------------------------------
    Case("compression_rate_larger_than_lookback", lambda tmp: tiny(compression_rate=13),
         ValueError, r"compression_rate=13 is larger than the lookback input_chunk_length=12"),
    Case("compression_rate_below_1", lambda tmp: tiny(compression_rate=0.5), ValueError,
         r"compression_rate must be >= 1"),
    Case("group_size_0", lambda tmp: tiny(group_size=0), ValueError,
         r"group_size must be a positive integer \(patchings sampled per series and scored "
         r"against the decoded one\), got 0"),
    Case("policy_is_not_a_parameter", lambda tmp: tiny(policy="greedy"), TypeError,
         r"policy"),
    Case("negative_kl_coef", lambda tmp: tiny(kl_coef=-0.5), ValueError,
         r"kl_coef must be a finite number >= 0, got -0\.5"),
    Case("policy_other_than_the_given_patcher", patcher_with_another_policy, ValueError,
         r"holds a patcher of the 'offset' policy, a benchmark ablation"),
    Case("version_1_patcher_file", version_1_patcher_file, ValueError,
         r"has patcher format version 1; .* Pretrain a new patcher"),
    Case("predict_before_fit", lambda tmp: tiny().predict(fh=[1, 2]), NotFittedError,
         r"has not been fitted yet\. Please call `fit` first"),
    Case("patcher_file_of_another_format", foreign_patcher_file, ValueError,
         r"is not a reinpatch-forecast patcher"),
    Case("foundation_patcher_file_works", foundation_patcher_file, check=finite),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input(case: Case, tmp_path):
    if case.raises is not None:
        with pytest.raises(case.raises, match=case.match):
            case.run(tmp_path)
    else:
        case.check(case.run(tmp_path))


def test_truncated_sktime_save_fails_in_sktime_load(make_forecaster, tmp_path):
    """sktime.base.load opens the zip before our class is known: sktime's own error."""
    import zipfile

    from sktime.base import load

    forecaster = make_forecaster().fit(sktime_series(sine_values(60)), fh=[1, 2, 3])
    forecaster.save(str(tmp_path / "forecaster"))
    data = (tmp_path / "forecaster.zip").read_bytes()
    (tmp_path / "cut.zip").write_bytes(data[: len(data) // 2])
    with pytest.raises(zipfile.BadZipFile):
        load(str(tmp_path / "cut"))
