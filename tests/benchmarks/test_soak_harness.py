"""The sktime and cli variants' bookkeeping in benchmarks/soak.py: the cli verdict, the merge of
the variants not run from an existing soak.csv, the report's subprocess table, and the process
table (nothing is soaked here; tests/benchmarks/test_benchmark_scripts.py runs a smoke soak)."""

from __future__ import annotations

import csv
import os

import pytest


@pytest.fixture(scope="module")
def soak(import_benchmark):
    return import_benchmark("soak")


def cli_sample(soak, cycle: int, rss: float = 500.0, fds: int = 5, files: int = 0,
               strays: int = 0, zombies: int = 0):
    return soak.Sample("cli", cycle, rss, rss, fds, 1000, 30.0 * cycle, 30.0,
                       fit_peak_rss_mb=480.0, predict_peak_rss_mb=475.0,
                       segment_peak_rss_mb=477.0, fit_s=10.0, predict_s=10.0, segment_s=10.0,
                       leftover_files=files, stray_processes=strays, zombies=zombies,
                       forecasts_differ=0)


def test_cli_growth_counts_from_cycle_1_and_fails_on_anything_left_behind(soak):
    samples = [cli_sample(soak, c, rss=500.0 + (c == 0) * -20) for c in range(0, 6)]
    grown = soak.growth(samples)
    assert (grown["from_cycle"], grown["to_cycle"]) == (1, 5)
    assert grown["rss_mb"] == 0.0 and grown["met"]
    for left in ({"files": 1}, {"strays": 1}, {"zombies": 2}):
        assert not soak.growth(samples[:-1] + [cli_sample(soak, 5, **left)])["met"]
    # in-process variants still count from cycle 20, without the cli fields
    quiet = [soak.Sample("sktime", c, 500.0, 500.0, 5, 1000, c, 0.1) for c in (0, 10, 20, 30)]
    assert soak.growth(quiet)["from_cycle"] == 20 and soak.growth(quiet)["met"]


def test_write_keeps_the_variants_not_run_from_soak_csv(soak, tmp_path):
    old = [soak.Sample("quiet", c, 490.0, 490.0, 5, 1000, c, 0.3) for c in (0, 20, 40)]
    soak.write_csv(tmp_path / "soak.csv", [vars(s) for s in old], soak.FIELDS, "old1234",
                   "2026-01-01 00:00 UTC")
    cli = [cli_sample(soak, c) for c in range(0, 4)]
    grown = soak.write({"cli": cli}, "python benchmarks/soak.py --variants cli", 1, tmp_path)
    assert set(grown) == {"quiet", "cli"}
    with (tmp_path / "soak.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["variant"] for r in rows] == ["quiet"] * 3 + ["cli"] * 4
    assert {r["commit"] for r in rows if r["variant"] == "quiet"} == {"old1234"}
    assert rows[0]["fit_s"] == "" and float(rows[-1]["fit_s"]) == 10.0
    report = (tmp_path / "soak.md").read_text()
    assert "| quiet |" in report and "`old1234`, 2026-01-01 00:00 UTC" in report
    assert "## The command line's subprocesses" in report
    assert "| fit | 480 → 480 (480–480) | 10.0 (10.0–10.0) |" in report
    # a second write reads its own CSV back: the cli fields survive the round trip
    again = soak.previous_runs(tmp_path / "soak.csv", set())[0]
    assert again["cli"][-1] == cli[-1] and again["quiet"][0] == old[0]


def test_process_table_finds_this_process(soak):
    table = {pid: (ppid, session, state) for pid, ppid, session, state in soak.process_table()}
    ppid, session, state = table[os.getpid()]
    assert ppid == os.getppid() and session == os.getsid(0) and state in "RS"
