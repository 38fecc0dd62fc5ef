"""Leave one dataset out: the recipe chosen without a dataset, scored on it from validation
MSE only."""

from __future__ import annotations

import pytest

import lodo

CELLS = [("A", 96, 96), ("B", 96, 96), ("C", 24, 168)]


def _records(values: dict[str, dict[str, list[float]]], test: float = 0.0) -> list[dict]:
    """Records of candidate -> dataset -> validation MSE per seed (test MSE constant)."""
    out = []
    for candidate, per_dataset in values.items():
        for (dataset, horizon, lookback) in CELLS:
            for seed, val in enumerate(per_dataset.get(dataset, [])):
                out.append({"model": candidate, "protocol": "reduced", "dataset": dataset,
                            "horizon": horizon, "lookback": lookback, "seed": seed,
                            "val_mse": val, "test_mse": test})
    return out


def test_a_recipe_that_wins_elsewhere_but_loses_on_the_left_out_dataset_is_flagged():
    records = _records({"x": {"A": [1.00], "B": [2.00], "C": [1.10]},
                        "y": {"A": [1.01], "B": [2.02], "C": [1.00]}})
    scores = lodo.cell_scores(records, ["x", "y"], "reduced", CELLS)
    assert scores[("C", 24, 168)]["x"] == pytest.approx(1.10)
    rows = {r["left_out"]: r for r in lodo.leave_one_out(scores, ["x", "y"])}
    assert rows["C"]["chosen_on_the_others"] == "x" and rows["C"]["best_on_it"] == "y"
    assert rows["C"]["gap_pct"] == pytest.approx(10.0) and not rows["C"]["holds"]
    assert rows["A"]["chosen_on_the_others"] == "y"  # 1.0 on C outweighs 1 % on B
    assert rows["A"]["holds"] and rows["A"]["gap_pct"] == pytest.approx(1.0)


def test_scores_use_the_seeds_every_candidate_has_and_skip_cells_a_candidate_lacks():
    records = _records({"x": {"A": [1.0, 3.0], "B": [1.0]},
                        "y": {"A": [1.5], "B": [1.0], "C": [1.0]}})
    scores = lodo.cell_scores(records, ["x", "y"], "reduced", CELLS)
    assert set(scores) == {("A", 96, 96), ("B", 96, 96)}  # x has no record on C
    assert scores[("A", 96, 96)] == {"x": 1.0, "y": 1.5}  # seed 0 only: x's seed 1 unshared


def test_the_recipe_cells_are_the_experiments_default_ones():
    cells = lodo.default_cells()
    assert ("ETTh1", 720, 96) in cells and ("vic_elec", 48, 336) in cells
    assert len({c[0] for c in cells}) == 7
