"""Bad inputs to the ``reinpatch-forecast`` command line (issue #8, table 1).

Run in-process through :func:`reinpatch_forecast.cli.main`: every bad input gives exit code 1
(2 for a bad argument) and one line on stderr naming the problem, never a traceback.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest
from support import sine_values

cli = pytest.importorskip("reinpatch_forecast.cli")

TINY_FIT = ["--lookback", "12", "--horizon", "3", "--compression-rate", "3", "--group-size", "2",
            "--d-model", "8", "--n-heads", "1", "--n-layers", "1", "--epochs", "1",
            "--batch-size", "16", "--quiet"]


def write_csv(path: Path, values, column: str = "y", extra: dict | None = None) -> str:
    values = np.asarray(values)
    frame = pd.DataFrame({"date": pd.date_range("2020-01-01", periods=len(values), freq="h"),
                          column: values, **(extra or {})})
    frame.to_csv(path, index=False)
    return str(path)


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("cli_model")
    csv = write_csv(folder / "train.csv", sine_values(60))
    model = str(folder / "model.pt")
    assert cli.main(["fit", "--csv", csv, "--target", "y", "--out", model, *TINY_FIT]) == 0
    return model


@dataclass
class Case:
    id: str
    args: Callable[[Path, str], list[str]]  # (tmp_path, saved model) -> argv
    code: int
    stderr: str | None = None  # regex
    check: Callable[[Path], None] | None = None


def fit_on(values, column="y", extra=None, options=()):
    def args(tmp: Path, model: str) -> list[str]:
        csv = write_csv(tmp / "data.csv", values, column, extra)
        return ["fit", "--csv", csv, "--target", column, "--out", str(tmp / "m.pt"), *TINY_FIT,
                *options]
    return args


def predict_on(values, damage: Callable[[str], None] | None = None):
    def args(tmp: Path, model: str) -> list[str]:
        if damage is not None:
            shutil.copy(model, tmp / "model.pt")
            shutil.copy(model + ".ckpt", tmp / "model.pt.ckpt")
            model = str(tmp / "model.pt")
            damage(model)
        csv = write_csv(tmp / "history.csv", values)
        return ["predict", "--model", model, "--csv", csv, "--out", str(tmp / "forecast.csv")]
    return args


def truncate(path: str) -> None:
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[: len(data) // 2])


def forecast_is(value: float):
    def check(tmp: Path) -> None:
        forecast = pd.read_csv(tmp / "forecast.csv")
        np.testing.assert_allclose(forecast["y"].to_numpy(), value, rtol=1e-5, atol=1e-2)
    return check


def forecast_is_finite(tmp: Path) -> None:
    assert np.isfinite(pd.read_csv(tmp / "forecast.csv")["y"].to_numpy()).all()


def with_value(value, at=10):
    values = sine_values(60)
    values[at] = value
    return values


def empty_csv(tmp: Path, model: str) -> list[str]:
    (tmp / "empty.csv").write_text("")
    return ["fit", "--csv", str(tmp / "empty.csv"), "--target", "y", "--out",
            str(tmp / "m.pt"), *TINY_FIT]


def foreign_patcher(tmp: Path, model: str) -> list[str]:
    import torch

    torch.save({"weights": torch.zeros(3)}, tmp / "other.pt")
    return fit_on(sine_values(60), options=("--patcher", str(tmp / "other.pt")))(tmp, model)


def patcher_file_with_another_policy(tmp: Path, model: str) -> list[str]:
    import torch

    from reinpatch_forecast.patcher_io import patcher_state
    from reinpatch_forecast.nn import LearnedPatcher

    state = patcher_state(LearnedPatcher(hidden_size=8, n_layers=1))
    state["config"]["policy"] = "offset"  # a patcher of the benchmarks' offset variant
    torch.save(state, tmp / "p.pt")
    return fit_on(sine_values(60), options=("--patcher", str(tmp / "p.pt")))(tmp, model)


def version_1_patcher_file(tmp: Path, model: str) -> list[str]:
    import torch

    from reinpatch_forecast.patcher_io import patcher_state
    from reinpatch_forecast.nn import LearnedPatcher

    state = patcher_state(LearnedPatcher(hidden_size=8, n_layers=1))
    state["version"] = 1
    state["config"] = {"hidden_size": 8, "n_layers": 1, "kernel_size": 3, "uniform_prior": 3.0}
    torch.save(state, tmp / "old.pt")
    return fit_on(sine_values(60), options=("--patcher", str(tmp / "old.pt")))(tmp, model)


CASES = [
    Case("nan_in_target", fit_on(with_value(np.nan)), 1,
         r"data\.csv contains 1 NaN value in column\(s\) 'y' \(first at 2020-01-01 10:00:00\)\. "
         r"Fill the empty cells of the target columns"),
    Case("inf_in_target", fit_on(with_value(np.inf)), 1,
         r"data\.csv contains 1 infinite value in column\(s\) 'y' \(first at 2020-01-01 "
         r"10:00:00\)\. .* replace infinite values"),
    Case("shorter_than_lookback_plus_horizon", fit_on(sine_values(14)), 1,
         r"has 14 rows; fit with --lookback 12 and --horizon 3 needs at least 15"),
    Case("empty_file", empty_csv, 1, r"is empty"),
    Case("header_only", fit_on(np.zeros(0)), 1, r"has a header but no rows"),
    Case("non_numeric_column", fit_on(["a", "b", "c"] * 20), 1,
         r"data\.csv has non-numeric column\(s\) 'y' \(str\)\. Every column must hold numbers "
         r"\(booleans count as 0 / 1\): convert them to numbers, or leave them out"),
    Case("values_beyond_float32_squares", fit_on(sine_values(60, 1e20)), 1,
         r"beyond 1e\+18.* Rescale"),
    Case("compression_rate_larger_than_lookback",
         fit_on(sine_values(60), options=("--compression-rate", "13")), 1,
         r"compression_rate=13.0 is larger than the lookback"),
    Case("compression_rate_below_1",
         fit_on(sine_values(60), options=("--compression-rate", "0.5")), 1,
         r"compression_rate must be >= 1"),
    Case("group_size_0", fit_on(sine_values(60), options=("--group-size", "0")), 2,
         r"--group-size: expected a positive integer"),
    Case("policy_is_not_an_option", fit_on(sine_values(60), options=("--policy", "greedy")),
         2, r"unrecognized arguments: --policy"),
    Case("negative_kl_coef", fit_on(sine_values(60), options=("--kl-coef", "-0.5")), 2,
         r"--kl-coef: expected a number >= 0, got '-0.5'"),
    Case("policy_other_than_the_patcher_file", patcher_file_with_another_policy, 1,
         r"holds a patcher of the 'offset' policy, a benchmark ablation"),
    Case("version_1_patcher_file", version_1_patcher_file, 1,
         r"has patcher format version 1; .* Pretrain a new patcher"),
    Case("negative_lookback", fit_on(sine_values(60), options=("--lookback", "-3")), 2,
         r"expected a positive integer"),
    Case("patcher_file_of_another_format", foreign_patcher, 1,
         r"is not a reinpatch-forecast patcher"),
    Case("predict_with_a_missing_model",
         lambda tmp, model: predict_on(sine_values(60))(tmp, str(tmp / "nowhere.pt")), 1,
         r"no such file"),
    Case("predict_with_a_truncated_model", predict_on(sine_values(60), damage=truncate), 1,
         r"cannot load a ReinPatchModel from .*model\.pt.*truncated or corrupted"),
    Case("predict_with_a_truncated_checkpoint",
         predict_on(sine_values(60), damage=lambda path: truncate(path + ".ckpt")), 1,
         r"model\.pt\.ckpt.*truncated or corrupted"),
    Case("predict_history_shorter_than_lookback", predict_on(sine_values(8)), 1,
         r"has 8 rows; the model \(lookback 12\) needs at least 12"),
    Case("predict_constant_history", predict_on(np.full(60, 5.0)), 0,
         check=forecast_is(5.0)),
    Case("predict_values_near_1e12", predict_on(sine_values(60, 1e12, 5e12)), 0,
         check=forecast_is_finite),
    Case("predict_values_near_1e-12", predict_on(sine_values(60, 1e-12, 5e-12)), 0,
         check=forecast_is_finite),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input(case: Case, saved_model: str, tmp_path: Path, capsys):
    code = cli.main(case.args(tmp_path, saved_model))
    err = capsys.readouterr().err
    assert code == case.code, err
    assert "Traceback" not in err
    if case.stderr is not None:
        assert len(err.strip().splitlines()) == 1, err
        assert re.search(case.stderr, err), err
    if case.check is not None:
        case.check(tmp_path)
