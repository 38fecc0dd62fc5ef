"""The reinpatch-forecast command: fit -> predict -> segment, demo, exit codes and errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from darts import TimeSeries

from reinpatch_forecast.cli import main

TINY = ["--lookback", "24", "--horizon", "6", "--epochs", "1", "--compression-rate", "4",
        "--group-size", "4", "--d-model", "8", "--n-heads", "2", "--n-layers", "1", "--quiet"]
PNG = b"\x89PNG"


def _write_csv(path: Path, rows: int = 120) -> Path:
    t = np.arange(rows)
    rng = np.random.default_rng(0)
    pd.DataFrame({
        "date": pd.date_range("2024-01-01", periods=rows, freq="h"),
        "load": np.sin(2 * np.pi * t / 24) + 0.1 * rng.standard_normal(rows),
        "temp": np.cos(2 * np.pi * t / 12),
        "note": ["x"] * rows,
    }).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> dict[str, Path]:
    """A CSV file and a tiny model trained on it by ``fit`` (once for the module)."""
    folder = tmp_path_factory.mktemp("cli")
    csv = _write_csv(folder / "data.csv")
    model = folder / "models" / "model.pt"
    code = main(["fit", "--csv", str(csv), "--target", "load,temp", "--out", str(model), *TINY])
    assert code == 0
    return {"folder": folder, "csv": csv, "model": model}


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_fit_saves_a_model(workspace):
    assert workspace["model"].is_file()
    assert Path(f"{workspace['model']}.ckpt").is_file()


def test_fit_passes_kl_coef(tmp_path, capsys):
    from reinpatch_forecast.darts import ReinPatchModel

    csv = _write_csv(tmp_path / "data.csv")
    out = tmp_path / "density.pt"
    code = main(["fit", "--csv", str(csv), "--target", "load", "--out", str(out), *TINY,
                 "--kl-coef", "0.25"])
    assert code == 0
    assert "learned patcher (density policy)" in capsys.readouterr().out
    config = ReinPatchModel.load(str(out)).model.network.config
    assert (config.training.kl_coef, config.training.group_size) == (0.25, 4)


def test_predict_writes_a_csv_with_dates_and_targets(workspace, tmp_path, capsys):
    out = tmp_path / "forecast.csv"
    plot = tmp_path / "forecast.png"
    code = main(["predict", "--model", str(workspace["model"]), "--csv", str(workspace["csv"]),
                 "--out", str(out), "--n", "8", "--plot", str(plot), "--quiet"])
    assert code == 0
    assert "wrote 8 forecast step(s)" in capsys.readouterr().out
    frame = pd.read_csv(out, parse_dates=["date"])
    assert list(frame.columns) == ["date", "load", "temp"]
    assert len(frame) == 8
    assert frame["date"].iloc[0] == pd.Timestamp("2024-01-01") + pd.Timedelta(hours=120)
    assert frame["date"].diff().dropna().eq(pd.Timedelta(hours=1)).all()
    assert np.isfinite(frame[["load", "temp"]].to_numpy()).all()
    assert plot.read_bytes().startswith(PNG)


def test_predict_csv_reads_back_as_float64_with_the_models_values(workspace, tmp_path):
    from reinpatch_forecast.darts import ReinPatchModel

    out = tmp_path / "forecast.csv"
    assert main(["predict", "--model", str(workspace["model"]), "--csv", str(workspace["csv"]),
                 "--out", str(out), "--quiet"]) == 0
    frame = pd.read_csv(out)
    assert (frame[["load", "temp"]].dtypes == np.float64).all()
    model = ReinPatchModel.load(str(workspace["model"]))
    data = pd.read_csv(workspace["csv"])
    series = TimeSeries.from_values(data[["load", "temp"]].to_numpy(np.float64))
    expected = model.predict(6, series=series, verbose=False).values()  # float64, from float32
    # the CSV holds each float32 value in its shortest form: read back, it is that value
    np.testing.assert_array_equal(frame[["load", "temp"]].to_numpy().astype(np.float32),
                                  expected.astype(np.float32))


def test_predict_defaults_to_the_model_horizon(workspace, tmp_path):
    out = tmp_path / "forecast.csv"
    assert main(["predict", "--model", str(workspace["model"]), "--csv", str(workspace["csv"]),
                 "--out", str(out), "--quiet"]) == 0
    assert len(pd.read_csv(out)) == 6


def test_segment_plots_the_last_window(workspace, tmp_path, capsys):
    out = tmp_path / "patches.png"
    code = main(["segment", "--model", str(workspace["model"]), "--csv", str(workspace["csv"]),
                 "--out", str(out), "--quiet"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "load: patches start at [0," in printed and "temp: patches start at [0," in printed
    assert out.read_bytes().startswith(PNG)


def test_demo_prints_metrics_and_writes_figures(tmp_path, capsys):
    out = tmp_path / "demo"
    code = main(["demo", "--out", str(out), "--lookback", "24", "--horizon", "6",
                 "--epochs", "1", "--max-windows", "16", "--spike-steps", "2", "--quiet"])
    assert code == 0
    printed = capsys.readouterr().out
    for name in ("ReinPatch (learned)", "uniform patches", "darts TSMixer", "darts DLinear",
                 "NaiveSeasonal", "Learned vs uniform on this split", "Spike task: the learned"):
        assert name in printed
    for name in ("forecast.png", "segmentation.png", "boundary_statistics.png",
                 "spike_segmentation.png"):
        assert (out / name).read_bytes().startswith(PNG), name


# -- errors ----------------------------------------------------------------------------------


def test_missing_csv_file(tmp_path, capsys):
    code = main(["fit", "--csv", str(tmp_path / "nope.csv"), "--target", "load",
                 "--out", str(tmp_path / "m.pt"), *TINY])
    assert code == 1
    assert _error_line(capsys).endswith(f"error: no such file: {tmp_path / 'nope.csv'}")


def test_missing_column(workspace, tmp_path, capsys):
    code = main(["fit", "--csv", str(workspace["csv"]), "--target", "load,price",
                 "--out", str(tmp_path / "m.pt"), *TINY])
    assert code == 1
    line = _error_line(capsys)
    assert "'price' not in" in line and "columns: date, load, temp, note" in line


def test_missing_date_column(workspace, tmp_path, capsys):
    code = main(["fit", "--csv", str(workspace["csv"]), "--target", "load", "--date-column",
                 "time", "--out", str(tmp_path / "m.pt"), *TINY])
    assert code == 1
    assert "no date column 'time'" in _error_line(capsys)


def test_non_numeric_target(workspace, tmp_path, capsys):
    code = main(["fit", "--csv", str(workspace["csv"]), "--target", "note",
                 "--out", str(tmp_path / "m.pt"), *TINY])
    assert code == 1
    assert "has non-numeric column(s) 'note' (str). Every column must hold numbers" \
        in _error_line(capsys)


def test_too_short_series(tmp_path, capsys):
    csv = _write_csv(tmp_path / "short.csv", rows=20)
    code = main(["fit", "--csv", str(csv), "--target", "load", "--out", str(tmp_path / "m.pt"),
                 *TINY])
    assert code == 1
    assert "has 20 rows" in _error_line(capsys)
    assert not (tmp_path / "m.pt").exists()


def test_too_short_series_for_predict(workspace, tmp_path, capsys):
    csv = _write_csv(tmp_path / "short.csv", rows=10)
    code = main(["predict", "--model", str(workspace["model"]), "--csv", str(csv),
                 "--out", str(tmp_path / "f.csv")])
    assert code == 1
    assert "has 10 rows" in _error_line(capsys)


def test_unreadable_csv(tmp_path, capsys):
    csv = tmp_path / "bad.csv"
    csv.write_bytes(b'date,load\n"2024-01-01,1\n2024-01-02,"2,3\n')
    code = main(["fit", "--csv", str(csv), "--target", "load", "--out", str(tmp_path / "m.pt"),
                 *TINY])
    assert code == 1
    _error_line(capsys)


def test_damaged_and_missing_model_files(workspace, tmp_path, capsys):
    bad = tmp_path / "bad.pt"
    bad.write_text("not a model")
    args = ["--csv", str(workspace["csv"]), "--out", str(tmp_path / "f.csv")]
    assert main(["predict", "--model", str(bad), *args]) == 1
    assert "cannot load a ReinPatchModel" in _error_line(capsys)
    assert main(["segment", "--model", str(tmp_path / "nope.pt"), *args]) == 1
    assert "no such file" in _error_line(capsys)
    no_weights = tmp_path / "no_weights.pt"
    shutil.copy(workspace["model"], no_weights)
    assert main(["predict", "--model", str(no_weights), *args]) == 1
    assert "no trained weights" in _error_line(capsys)


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "required: COMMAND"),
        (["train"], "invalid choice"),
        (["fit", "--csv", "x.csv"], "required: --target"),
        (["fit", "--csv", "x.csv", "--target", "a", "--lookback", "0", "--horizon", "6",
          "--out", "m.pt"], "--lookback: expected a positive integer"),
        (["predict", "--model", "m.pt", "--csv", "x.csv", "--out", "f.csv", "--n", "abc"],
         "--n: expected a positive integer"),
        (["fit", "--csv", "x.csv", "--target", "a,,b", "--lookback", "24", "--horizon", "6",
          "--out", "m.pt"], "comma-separated"),
        (["fit", "--csv", "x.csv", "--target", "a", "--lookback", "24", "--horizon", "6",
          "--out", "m.pt", "--policy", "density"], "unrecognized arguments: --policy"),
        (["fit", "--csv", "x.csv", "--target", "a", "--lookback", "24", "--horizon", "6",
          "--out", "m.pt", "--kl-coef", "-1"], "--kl-coef: expected a number >= 0"),
        (["fit", "--csv", "x.csv", "--target", "a", "--lookback", "24", "--horizon", "6",
          "--out", "m.pt", "--backbone-draws", "1"], "unrecognized arguments: --backbone-draws"),
        (["pretrain-patcher", "--out", "p.pt", "--uniform-prior", "3"],
         "unrecognized arguments: --uniform-prior"),
        (["pretrain-patcher", "--out", "p.pt", "--entropy-coef", "0.01"],
         "unrecognized arguments: --entropy-coef"),
        (["pretrain-patcher", "--out", "p.pt", "--scored-share", "1.5"],
         "--scored-share: expected a number in (0, 1]"),
    ],
)
def test_usage_errors_exit_2_with_one_line(argv, message, capsys):
    assert main(argv) == 2
    line = _error_line(capsys)
    assert message in line and "--help" in line


def test_help_of_every_subcommand(capsys):
    for command in ("demo", "fit", "predict", "segment", "pretrain-patcher"):
        assert main([command, "--help"]) == 0
        assert f"usage: reinpatch-forecast {command}" in capsys.readouterr().out


def test_installed_console_script_help():
    script = Path(sys.executable).with_name("reinpatch-forecast")
    executable = str(script) if script.is_file() else shutil.which("reinpatch-forecast")
    if executable is None:
        pytest.skip("the reinpatch-forecast script is not installed: run pip install -e .")
    result = subprocess.run([executable, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "usage: reinpatch-forecast" in result.stdout
    for command in ("demo", "fit", "predict", "segment", "pretrain-patcher"):
        assert command in result.stdout


def test_pretrain_patcher_writes_a_loadable_patcher(tmp_path, capsys):
    from reinpatch_forecast.patcher_io import file_sha256, load_patcher

    out = tmp_path / "patchers" / "mine.pt"
    code = main(["pretrain-patcher", "--out", str(out), "--lookback", "32", "--horizon", "8",
                 "--epochs", "1", "--max-windows", "2", "--group-size", "2", "--quiet"])
    printed = capsys.readouterr().out
    assert code == 0
    assert "no LTSF training splits" in printed  # --data-dir not given, and it says so
    assert "epoch 0: reward -" in printed
    assert file_sha256(out) in printed
    patcher = load_patcher(out)
    assert patcher.hidden_size == 8 and patcher.policy_name == "density"


@pytest.fixture
def pretrain_arguments(monkeypatch) -> dict:
    """The keyword arguments the CLI passes ``pretrain_patcher``, which a stub replaces (no
    training: it returns a small new patcher)."""
    from reinpatch_forecast import foundation
    from reinpatch_forecast.nn import LearnedPatcher

    seen: dict = {}

    def fake_pretrain(corpus, **kwargs):
        seen.update(kwargs)
        return foundation.PretrainResult(
            patcher=LearnedPatcher(hidden_size=4, n_layers=1),
            history=[], n_series=len(corpus), n_train_windows=0, settings=kwargs)

    monkeypatch.setattr(foundation, "pretrain_patcher", fake_pretrain)
    return seen


def test_pretrain_patcher_with_a_kl_coef(tmp_path, pretrain_arguments, capsys):
    """--kl-coef reaches pretrain_patcher."""
    from reinpatch_forecast.patcher_io import load_patcher

    seen = pretrain_arguments
    out = tmp_path / "density.pt"
    code = main(["pretrain-patcher", "--out", str(out), "--kl-coef", "0.3", "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert (seen["kl_coef"], seen["group_size"]) == (0.3, 8) and "policy" not in seen
    assert seen["scored_share"] == 0.25  # the shipped patcher's, not the model option's
    assert "uniform_prior" not in seen and "entropy_coef" not in seen
    assert load_patcher(out).policy_name == "density"


def test_pretrain_patcher_with_a_scored_share(tmp_path, pretrain_arguments, capsys):
    """--scored-share reaches pretrain_patcher."""
    seen = pretrain_arguments
    code = main(["pretrain-patcher", "--out", str(tmp_path / "p.pt"), "--scored-share", "0.5",
                 "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert seen["scored_share"] == 0.5


def test_pretrain_patcher_with_a_missing_data_dir(tmp_path, capsys):
    code = main(["pretrain-patcher", "--out", str(tmp_path / "p.pt"),
                 "--data-dir", str(tmp_path / "nowhere")])
    assert code == 1
    assert "is not a folder" in capsys.readouterr().err


def test_fit_with_the_shipped_pretrained_patcher(tmp_path, capsys):
    csv = _write_csv(tmp_path / "data.csv")
    out = tmp_path / "model.pt"
    code = main(["fit", "--csv", str(csv), "--target", "load", "--out", str(out),
                 "--patcher", "pretrained", *TINY])
    assert code == 0
    assert "pretrained patcher" in capsys.readouterr().out


def test_a_user_error_is_one_line_and_a_bug_keeps_its_traceback(tmp_path, capsys, monkeypatch):
    """main reports the package's own error type on one line (exit 1) and lets any other
    exception, a bug, propagate with its traceback."""
    from reinpatch_forecast.cli import parser
    from reinpatch_forecast.errors import ReinPatchInputError

    args = ["segment", "--model", "m.pt", "--csv", "d.csv", "--out", str(tmp_path / "s.png")]

    def user_error(_):
        raise ReinPatchInputError("the series has 3 rows; segment needs at least 96")

    monkeypatch.setattr(parser, "segment_command", user_error)
    assert main(args) == 1
    assert "needs at least 96" in _error_line(capsys)

    def bug(_):
        raise KeyError("a bug, not the user's mistake")

    monkeypatch.setattr(parser, "segment_command", bug)
    with pytest.raises(KeyError, match="a bug"):
        main(args)
