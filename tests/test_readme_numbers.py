"""The README's results table is computed from the committed benchmark results, by the rule the
README states above it: a number there that no longer matches the files fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
LTSF_CSV = ROOT / "benchmarks" / "results" / "ltsf.csv"
DATASETS = ["ETTh1", "ETTh2", "ETTm1", "ETTm2", "weather"]

#: README row label -> how its rows are found in ltsf.csv (a model name, or a darts peer
#: whose learning rate is picked on validation in each cell).
ROWS = {
    "ReinPatch, learned patches (previous patcher, 32 wide, 4 blocks)": ("model", "learned"),
    'ReinPatch, uniform patches (`patcher="uniform"`)': ("model", "uniform R=8"),
    "darts `TSMixerModel`": ("peer", "tsmixer"),
    "darts `DLinearModel`": ("peer", "dlinear"),
    "darts `NLinearModel`": ("peer", "nlinear"),
}


def _readme_table() -> dict[str, list[str]]:
    """The README table's cells by row label (the first table whose header names ETTh1)."""
    lines = (ROOT / "README.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith("| model |") and "ETTh1" in line)
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def _runs(kind: str, name: str) -> pd.DataFrame:
    """One row per (dataset, horizon) of the reduced protocol."""
    frame = pd.read_csv(LTSF_CSV)
    frame = frame[(frame.protocol == "reduced") & frame.dataset.isin(DATASETS)]
    if kind == "model":
        runs = frame[frame.model == name]
    else:
        runs = frame[frame.model.str.match(re.escape(name) + r" \(lr=")]
        runs = runs.loc[runs.groupby(["dataset", "horizon"]).val_mse.idxmin()]
    assert len(runs) == 4 * len(DATASETS), f"{name}: expected every dataset x 4 horizons"
    return runs


@pytest.mark.parametrize("label", list(ROWS))
def test_the_readme_row_matches_the_committed_results(label):
    table = _readme_table()
    assert label in table, f"the README table has no row {label!r}"
    runs = _runs(*ROWS[label])
    averages = runs.groupby("dataset").test_mse.mean()
    expected = [f"{averages[name]:.4f}" for name in DATASETS]
    expected.append(f"{runs.train_seconds.median():.0f}")
    assert table[label] == expected


def test_the_readme_claims_follow_from_its_table():
    """Both patchers below TSMixer and NLinear on every dataset and below DLinear on three;
    learned and uniform fit times about 2x apart."""
    table = {label: [float(cell) for cell in cells] for label, cells in _readme_table().items()}
    labels = list(ROWS)
    ours = [table[label] for label in labels[:2]]

    def datasets_below(peer: str) -> int:
        return sum(all(row[i] < table[peer][i] for row in ours) for i in range(len(DATASETS)))

    assert datasets_below(labels[2]) == 5  # TSMixer
    assert datasets_below(labels[4]) == 5  # NLinear
    assert datasets_below(labels[3]) == 3  # DLinear
    assert 1.8 <= ours[0][-1] / ours[1][-1] <= 2.5
