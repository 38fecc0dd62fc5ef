"""The spike-task experiment of the runner: each row's options reach the demo's spike task, one
record a row and seed, and a second command at the same commit measures nothing again."""

from __future__ import annotations

import run as runner
import tables
from reinpatch_forecast.cli import demo


def test_spike_rows_reach_the_spike_task_once_per_seed(tmp_path, monkeypatch):
    calls = []

    def spike_task(patcher, seed, **options):
        calls.append((patcher, seed, options))  # run_spike_task's own parameters
        return demo.SpikeResult(patcher, 0.5 + seed, 0.25, 1.0, None, None, None)

    monkeypatch.setattr(demo, "run_spike_task", spike_task)
    arguments = ["spike", "--models", "uniform", "learned, kl 0.1", "--seeds", "0", "1",
                 "--out-dir", str(tmp_path)]
    runner.main(arguments)
    assert calls == [("uniform", 0, {}), ("uniform", 1, {}),
                     *(("learned", seed, {"training": {"scored_share": 0.25, "kl_coef": 0.1},
                                          "patcher_lr": 3e-3}) for seed in (0, 1))]
    records = tables.load_jsonl(tmp_path / "spike_runs.jsonl")
    assert [(r["model"], r["seed"], r["test_mse"]) for r in records] == [
        ("uniform", 0, 0.5), ("uniform", 1, 1.5), ("learned, kl 0.1", 0, 0.5),
        ("learned, kl 0.1", 1, 1.5)]
    report = (tmp_path / "spike.md").read_text()
    assert "| uniform | 1.0000 | 0.7071 | 2 |" in report
    runner.main(arguments)
    assert len(calls) == 4
