"""The soak benchmark: the growth and verdict of a face's samples, and a short darts soak through
the runner that records its fields."""

from __future__ import annotations

import pytest

import run as runner
import soak
import tables


def _samples(rss: list[float], fds: list[int], every: int = 10) -> list[dict]:
    return [{"cycle": every * i, "rss_mb": r, "fds": f, "objects": 1000 + i}
            for i, (r, f) in enumerate(zip(rss, fds))]


def test_growth_counts_from_the_baseline_cycle_and_meets_the_target_when_flat():
    # the first cycles fill caches (500 -> 550): growth counts from cycle 20
    grown = soak.growth(_samples([500, 540, 550, 550, 551], [5, 5, 5, 5, 5]), from_cycle=20)
    assert grown["from_cycle"] == 20
    assert (grown["rss_mb_from"], grown["rss_mb_to"]) == (550, 551)
    assert grown["rss_growth_mb"] == pytest.approx(1.0)
    assert grown["objects_growth"] == 2
    assert grown["verdict"] == soak.growth(_samples([1, 1], [5, 5]), 0)["verdict"]
    assert grown["verdict"] != soak.growth(_samples([1, 100], [5, 5]), 0)["verdict"]


@pytest.mark.parametrize("samples, extra", [
    (_samples([500, 500, 500 + soak.RSS_TARGET_MB + 1], [5, 5, 5]), {}),
    (_samples([500, 500, 500], [5, 5, 6]), {}),
    (_samples([500, 500, 500], [5, 5, 5]), {"leftovers": 1}),
    (_samples([500, 500, 500], [5, 5, 5]), {"forecasts_differ": 1}),
])
def test_growth_misses_the_target_on_any_growth_or_leftover(samples, extra):
    met = soak.growth(_samples([500, 500, 500], [5, 5, 5]), from_cycle=10)["verdict"]
    assert soak.growth(samples, from_cycle=10, **extra)["verdict"] != met


def test_growth_trend_is_the_least_squares_slope_per_100_cycles():
    grown = soak.growth(_samples([500, 501, 502, 503], [5] * 4), from_cycle=0)
    assert grown["rss_trend_mb_per_100"] == pytest.approx(10.0)


def test_a_short_darts_soak_runs_through_the_runner_and_records_its_fields(tmp_path):
    runner.main(["soak", "--models", "darts", "--cycles", "3", "--out-dir", str(tmp_path)])
    records = tables.load_jsonl(tmp_path / "soak_runs.jsonl")
    assert len(records) == 1
    record = records[0]
    assert record["face"] == "darts" and record["cycles"] == 3
    assert [s["cycle"] for s in record["samples"]] == [0, 3]
    assert record["rss_mb_to"] > 0 and record["fds_to"] > 0
    assert record["commit"] and record["date"]
    assert (tmp_path / "soak.csv").exists() and (tmp_path / "soak.md").exists()
    # a second command at the same commit skips the recorded face
    runner.main(["soak", "--models", "darts", "--cycles", "3", "--out-dir", str(tmp_path)])
    assert len(tables.load_jsonl(tmp_path / "soak_runs.jsonl")) == 1
