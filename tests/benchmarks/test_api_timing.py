"""benchmarks/api_timing.py: the smoke run fits and forecasts both models through the public
darts API and writes their times (no time is asserted beyond being measured)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
ETTH1 = BENCHMARKS.parent.parent / "shared" / "data" / "ETTh1.csv.gz"


@pytest.mark.skipif(not ETTH1.is_file(), reason="ETTh1 is not in shared/data beside the repo")
def test_quick_run_times_both_models(tmp_path: Path):
    out = tmp_path / "results"
    subprocess.run([sys.executable, str(BENCHMARKS / "api_timing.py"), "--quick", "--out-dir",
                    str(out)], cwd=tmp_path, check=True, capture_output=True, text=True)
    with (out / "api_timing.csv").open() as handle:
        rows = {(row["shape"], row["model"]): row for row in csv.DictReader(handle)}
    shapes = {shape for shape, _ in rows}
    assert set(rows) == {(shape, m) for shape in shapes for m in ("learned", "uniform")}
    assert {"seven channels", "one series"} < shapes and len(shapes) == 3
    for (shape, _), row in rows.items():
        assert float(row["fit_s"]) > 0 and float(row["forecast_s"]) > 0
        if shape in ("seven channels", "one series"):
            assert (int(row["train_windows"]), int(row["forecasts"])) == (256, 50)
        assert float(rows[shape, "uniform"]["fit_x_uniform"]) == 1.0
    assert int(rows["one series", "learned"]["channels"]) == 1
    assert "| learned |" in (out / "api_timing.md").read_text()


@pytest.mark.skipif(not ETTH1.is_file(), reason="ETTh1 is not in shared/data beside the repo")
def test_another_setting_writes_its_own_table(tmp_path: Path):
    out = tmp_path / "results"
    subprocess.run([sys.executable, str(BENCHMARKS / "api_timing.py"), "--quick", "--lookback",
                    "48", "--compression-rate", "16", "--d-model", "16", "--out-dir", str(out)],
                   cwd=tmp_path, check=True, capture_output=True, text=True)
    assert not (out / "api_timing.csv").exists()
    with (out / "api_timing_L48.csv").open() as handle:
        assert {row["model"] for row in csv.DictReader(handle)} == {"learned", "uniform"}
    text = (out / "api_timing_L48.md").read_text()
    assert "--lookback 48 --compression-rate 16 --d-model 16" in text
    assert "L = 48" in text and "d_model = 16" in text


@pytest.mark.parametrize("argv, message", [
    (["--threads", "0"], "--threads must be >= 1"),
    (["--repeats", "0"], "--repeats must be >= 1"),
    (["--lookback", "0"], "--lookback must be >= 1"),
])
def test_bad_arguments_are_refused_before_any_work(import_benchmark, capsys, argv, message):
    with pytest.raises(SystemExit):
        import_benchmark("api_timing").main(argv)
    assert message in capsys.readouterr().err
