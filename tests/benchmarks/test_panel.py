"""The many-series prediction benchmark: the panel it builds, and a small run through the runner
that records one row per size with the line through the times."""

from __future__ import annotations

import numpy as np
import pytest

import panel
import run as runner
import tables


def test_the_panel_holds_short_float32_series_of_varied_lengths():
    series = panel.make_panel(count=50, seed=1)
    lengths = [len(s) for s in series]
    assert len(series) == 50 and min(lengths) >= 48 and max(lengths) <= 120
    assert len(set(lengths)) > 10
    assert all(s.dtype == np.float32 and s.n_components == 1 for s in series)
    again = panel.make_panel(count=50, seed=1)
    assert all(np.array_equal(a.values(), b.values()) for a, b in zip(series, again))


def test_a_small_panel_run_records_a_row_per_size_and_the_line_through_the_times(
        tmp_path, monkeypatch):
    monkeypatch.setattr(panel, "SERIES", 60)
    monkeypatch.setattr(panel, "FIT_SAMPLE", 12)
    monkeypatch.setattr(panel, "SIZES", (20, 60))
    monkeypatch.setattr(panel, "REPEATS", 1)
    runner.main(["panel", "--models", "reinpatch", "--out-dir", str(tmp_path)])
    records = tables.load_jsonl(tmp_path / "panel_runs.jsonl")
    assert [r["series"] for r in records] == [20, 60]
    for record in records:
        assert record["model"] == "reinpatch" and record["predict_s"] > 0
        assert record["ms_per_series"] == pytest.approx(
            1000 * record["predict_s"] / record["series"])
        assert record["peak_rss_mb"] > 0 and record["rss_before_mb"] > 0
    # two sizes: the line passes through both times
    slope = (records[1]["predict_s"] - records[0]["predict_s"]) / 40
    assert records[0]["line_ms_per_series"] == pytest.approx(1000 * slope, rel=1e-6)
    assert records[0]["line_worst_gap_pct"] == pytest.approx(0, abs=1e-6)
    assert (tmp_path / "panel.md").exists()
    # a second command at the same commit measures nothing again
    runner.main(["panel", "--models", "reinpatch", "--out-dir", str(tmp_path)])
    assert len(tables.load_jsonl(tmp_path / "panel_runs.jsonl")) == 2
