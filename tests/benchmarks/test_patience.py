"""benchmarks/patience.py: the replay of Lightning's early stopping over a validation curve
agrees with Lightning on a real fit, and the table knows a test MSE only where a recorded run
kept that epoch."""

from __future__ import annotations

import pytest

import patience
import run as runner
from _data import generated_data


@pytest.mark.parametrize("curve, wait, expected", [
    ([3.0, 2.0, 2.5, 2.4, 1.0, 1.5], 2, (4, 1)),  # two epochs without a lower loss: stop
    ([3.0, 2.0, 2.5, 2.4, 1.0, 1.5], 3, (6, 4)),  # the fifth epoch improves in time
    ([1.0, 1.0, 1.0], 2, (3, 0)),  # an equal loss is no improvement
    ([2.0, 1.0], 10, (2, 1)),  # the curve ends first
])
def test_the_replay_stops_where_lightning_does_on_a_curve(curve, wait, expected):
    assert patience.early_stop(curve, wait) == expected


def test_an_empty_curve_is_refused():
    with pytest.raises(ValueError, match="no epoch"):
        patience.early_stop([], 3)


def test_the_replay_of_a_run_that_never_stopped_predicts_a_stopping_run(tmp_path):
    data = generated_data("random_walk", 24, series=2, length=400, data_seed=0)
    run = {"lookback": 24, "horizon": 6, "setting": "target", "seed": 0, "family": "reinpatch",
           "lr": 3e-2,  # a rate high enough that the validation loss turns up early
           "kwargs": {"patcher": "uniform", "compression_rate": 4, "d_model": 8, "n_heads": 2,
                      "n_layers": 1},
           "training": {"epochs": 6, "patience": 6, "batch_size": 16, "lr": 1e-3,
                        "max_train_windows": 64}}
    whole = runner.fit_and_score(run, data, tmp_path / "whole")
    curve = whole["val_loss_by_epoch"]
    assert whole["epochs"] == len(curve) == 6
    epochs, best = patience.early_stop(curve, 1)
    assert epochs < 6  # the case is one where early stopping acts
    stopped = runner.fit_and_score({**run, "training": {**run["training"], "patience": 1}},
                                   data, tmp_path / "stopped")
    assert stopped["epochs"] == epochs
    assert stopped["val_loss_by_epoch"] == curve[:epochs]  # the same path until it stops
    # the kept weights are the replayed best epoch's: darts' val_loss is the scored MSE
    assert stopped["val_mse"] == pytest.approx(curve[best], rel=1e-4)


def _record(model: str, seed: int, epochs: int, test: float, patience_: int, curve=None):
    return {"dataset": "d", "horizon": 96, "lookback": 96, "protocol": "full", "seed": seed,
            "model": model, "epochs": epochs, "test_mse": test,
            "val_loss_by_epoch": curve or [],
            "run": {"training": {"epochs": 7, "patience": patience_}}}


def test_a_test_mse_is_shown_only_where_a_recorded_run_kept_that_epoch():
    curve = [3.0, 2.0, 2.5, 1.5, 1.6, 1.7, 1.0]
    records = [_record("r, patience 10", 0, 7, 0.4, 10, curve),  # keeps the last epoch
               _record("r", 0, 6, 0.5, 2)]  # the sibling at patience 2: 6 epochs, keeps the 4th
    rows = {row["stopping"]: row
            for row in patience.patience_rows(records, (1, 2, 3, 10), (3, 7, 8))}
    assert "last of 8 epochs" not in rows  # beyond the curve
    assert (rows["last of 3 epochs"]["best_epoch"], rows["last of 3 epochs"]["val_loss"]) == \
        (3, 2.5)
    assert rows["last of 7 epochs"]["test_mse"] == 0.4  # the last epoch is the best
    rows = {int(name.split()[1]): row for name, row in rows.items() if "patience" in name}
    assert (rows[2]["test_mse"], rows[2]["epochs"], rows[2]["best_epoch"]) == (0.5, 6, 4)
    assert rows[3]["test_mse"] == rows[10]["test_mse"] == 0.4
    assert (rows[1]["epochs"], rows[1]["best_epoch"]) == (3, 2)
    assert rows[1]["test_mse"] is None  # no recorded run kept the second epoch
    assert rows[2]["val_above_best_pct"] == pytest.approx(50.0)
    assert rows[2]["row"] == "r"
    assert {row["replay_agrees"] for row in rows.values()} == {"1/1"}
    records[1]["epochs"] = 5  # a sibling that trained otherwise than the replay says
    assert patience.patience_rows(records, (2,), ())[0]["replay_agrees"] == "0/1"
