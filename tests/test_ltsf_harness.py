"""The LTSF benchmark's bookkeeping: cache keys, resumption and the tuned-uniform choice."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "benchmarks" / "ltsf.py"


@pytest.fixture(scope="module")
def ltsf():
    spec = importlib.util.spec_from_file_location("ltsf_harness", HARNESS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module while being created
    spec.loader.exec_module(module)
    return module


def _record(ltsf, model, params, val, test, horizon=96):
    spec = ltsf.RunSpec("ETTh1", horizon, model, params, 96, {"epochs": 10})
    return {"key": spec.key, "spec": ltsf.asdict(spec), "label": spec.label, "val_mse": val,
            "val_mae": val, "test_mse": test, "test_mae": test, "epochs": 3,
            "train_seconds": 1.0, "commit": "abc", "date": "2026-12-02"}


def test_keys_differ_by_config_and_settings(ltsf):
    a = ltsf.RunSpec("ETTh1", 96, "uniform", {"R": 4}, 96, {"epochs": 10})
    b = ltsf.RunSpec("ETTh1", 96, "uniform", {"R": 8}, 96, {"epochs": 10})
    c = ltsf.RunSpec("ETTh1", 96, "uniform", {"R": 4}, 96, {"epochs": 5})
    assert len({a.key, b.key, c.key}) == 3
    assert a.key == ltsf.RunSpec("ETTh1", 96, "uniform", {"R": 4}, 96, {"epochs": 10}).key


def test_plan_expands_uniform_sizes(ltsf):
    specs = ltsf.plan(["ETTh1"], [96, 192], ["uniform", "learned", "repeat"], 96, {})
    assert len(specs) == 2 * (len(ltsf.UNIFORM_SIZES) + 2)
    assert {s.params.get("R") for s in specs if s.model == "uniform"} == set(ltsf.UNIFORM_SIZES)


def test_tuned_uniform_is_chosen_on_validation_not_test(ltsf):
    runs = {}
    # R=16 has the best validation MSE but not the best test MSE: it must still be chosen.
    for r, val, test in [(4, 0.9, 0.40), (8, 0.8, 0.45), (16, 0.7, 0.50), (24, 0.95, 0.41)]:
        record = _record(ltsf, "uniform", {"R": r}, val, test)
        runs[record["key"]] = record
    rows = ltsf.rows_for_report(runs)
    tuned = [row for row in rows if row["model"].startswith("uniform tuned")]
    assert len(tuned) == 1
    assert tuned[0]["model"] == "uniform tuned (R=16)"
    assert tuned[0]["test_mse"] == 0.50


def test_cache_round_trip_and_report(ltsf, tmp_path):
    cache = tmp_path / "ltsf_runs.jsonl"
    record = _record(ltsf, "repeat", {}, 1.5, 1.29)
    ltsf.append_cache(record, cache)
    runs = ltsf.load_cache(cache)
    assert runs == {record["key"]: record}
    ltsf.write_report(runs, tmp_path)
    text = (tmp_path / "ltsf.md").read_text()
    assert "| repeat | 96 | 1.2900 |" in text
    assert "EntroPE (published, other code)" in text
    assert (tmp_path / "ltsf.csv").read_text().count("\n") == 2


def test_peer_learning_rate_is_chosen_on_validation(ltsf):
    runs = {}
    for lr, val, test in [(1e-3, 0.9, 0.40), (1e-4, 0.8, 0.45)]:
        record = _record(ltsf, "nlinear", {"lr": lr}, val, test)
        runs[record["key"]] = record
    rows = ltsf.rows_for_report(runs)
    assert [(r["model"], r["test_mse"]) for r in rows] == [("nlinear (lr=0.0001)", 0.45)]


def test_report_keeps_only_runs_of_the_given_settings(ltsf):
    kept = _record(ltsf, "uniform", {"R": 8}, 0.7, 0.4)
    spec = ltsf.RunSpec("ETTh1", 96, "uniform", {"R": 8}, 96, {"epochs": 3})
    other = {**kept, "key": spec.key, "spec": ltsf.asdict(spec)}
    rows = ltsf.rows_for_report({kept["key"]: kept, other["key"]: other}, {"epochs": 10})
    assert [r["model"] for r in rows] == ["uniform R=8"]


def test_summary_averages_complete_rows_and_bolds_the_best(ltsf):
    runs = {}
    for model, horizon, test in [("learned", 96, 0.40), ("learned", 192, 0.50),
                                 ("random", 96, 0.45)]:
        params = {"R": 8}
        record = _record(ltsf, model, params, 0.7, test, horizon=horizon)
        runs[record["key"]] = record
    lines = ltsf._summary(ltsf.rows_for_report(runs), "ETTh1", [96, 192])
    learned = next(line for line in lines if line.startswith("| learned |"))
    random = next(line for line in lines if line.startswith("| random |"))
    assert learned == "| learned | **0.4000** | **0.5000** | 0.4500 |"
    assert random == "| random | 0.4500 | – | – |"  # no average over a missing horizon


def test_foundation_rows_of_an_earlier_shipped_patcher_are_not_reported(ltsf):
    current = _record(ltsf, "foundation", {"R": 8, "patcher": ltsf.PRETRAINED_SHA256[:10]},
                      0.7, 0.5)
    earlier = _record(ltsf, "foundation", {"R": 8, "patcher": "0123456789"}, 0.6, 0.4)
    rows = ltsf.rows_for_report({current["key"]: current, earlier["key"]: earlier})
    assert [(r["model"], r["test_mse"]) for r in rows] == [("foundation (zero-shot)", 0.5)]
