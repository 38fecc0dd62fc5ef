"""What each early-stopping patience, or a fixed number of epochs, would have picked, read
from the validation curves of recipe runs that trained every epoch of their budget (the rows
``..., patience 10`` of ``specs.RECIPES`` at the full protocol's 10 epochs, and the row of 30
epochs without early stopping).

Lightning's ``EarlyStopping`` and darts' best-epoch checkpoint only read the validation loss
of each epoch, and a seeded run follows the same path until it stops, so one run that never
stops shows, for every patience, how many epochs a run would have trained and which epoch's
weights it would keep; a fit without validation keeps its last epoch. The test MSE is known
where the kept epoch is one a recorded run kept: the whole curve's best (the run itself) or
the best of its sibling row, the same recipe at the budget's patience (its record also checks
the replay: the epochs it trained). Writes ``results/patience.md`` and ``.csv``.

python benchmarks/patience.py
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, write_csv, write_markdown  # noqa: E402
from tables import load_jsonl, markdown_table  # noqa: E402

PATIENCES = (1, 2, 3, 4, 5, 10)
#: Fits without validation (sktime's, darts' without ``val_series``) keep the last epoch.
FIXED_EPOCHS = (4, 6, 8, 10, 15, 20, 30)
COLUMNS = ("protocol", "dataset", "horizon", "lookback", "row", "stopping", "n_seeds", "epochs",
           "best_epoch", "val_loss", "val_loss_std", "val_above_best_pct", "test_mse",
           "test_mse_std", "replay_agrees")


def early_stop(curve: Sequence[float], patience: int) -> tuple[int, int]:
    """Replay Lightning's ``EarlyStopping(mode="min", min_delta=0)`` over a validation curve.

    Parameters
    ----------
    curve
        The validation loss after each epoch, ``(E,)``.
    patience
        Epochs without a strictly lower loss before training stops.

    Returns
    -------
    tuple of int
        The epochs trained and the (0-based) epoch with the lowest loss among them, whose
        weights ``load_best`` restores.
    """
    if not curve:
        raise ValueError("an empty validation curve: the run recorded no epoch")
    best, best_epoch, waited = float("inf"), 0, 0
    for epoch, loss in enumerate(curve):
        if loss < best:
            best, best_epoch, waited = loss, epoch, 0
        else:
            waited += 1
        if waited >= patience:
            return epoch + 1, best_epoch
    return len(curve), best_epoch


def _full_curve_runs(records: list[dict]) -> dict[tuple, dict[int, dict]]:
    """Runs that never stopped early (patience at least their epochs), by cell and seed."""
    cells: dict[tuple, dict[int, dict]] = collections.defaultdict(dict)
    for record in records:
        training = record.get("run", {}).get("training", {})
        curve = record.get("val_loss_by_epoch") or []
        if training and training["patience"] >= training["epochs"] and \
                len(curve) == training["epochs"]:
            key = (record.get("protocol"), record["dataset"], record["horizon"],
                   record["lookback"], record["model"])
            cells[key][record["seed"]] = record
    return cells


def _base_row(model: str, seeds: dict[int, dict]) -> str:
    """The recipe row a row of its own patience trains: its name without that patience."""
    record = next(iter(seeds.values()))
    return model.removesuffix(f", patience {record['run']['training']['patience']}")


def _sibling(records: list[dict], record: dict) -> dict | None:
    """The record of the same recipe, cell and seed at the budget's own patience."""
    base = _base_row(record["model"], {record["seed"]: record})
    for other in records:
        if (other["model"], other["dataset"], other["horizon"], other["lookback"],
                other["seed"], other.get("protocol")) == (
                base, record["dataset"], record["horizon"], record["lookback"],
                record["seed"], record.get("protocol")):
            return other
    return None


def _rules(patiences: Sequence[int], fixed_epochs: Sequence[int]) -> list[tuple[str, Callable]]:
    """``(name, rule)``: a rule maps a validation curve to (epochs trained, epoch kept)."""
    rules: list[tuple[str, Callable]] = [
        (f"patience {p}", lambda curve, p=p: early_stop(curve, p)) for p in patiences]
    rules += [(f"last of {e} epochs", lambda curve, e=e: (e, e - 1)) for e in fixed_epochs]
    return rules


def patience_rows(records: list[dict], patiences: Sequence[int] = PATIENCES,
                  fixed_epochs: Sequence[int] = FIXED_EPOCHS) -> list[dict]:
    """One row a cell and stopping rule (early stopping at a patience, or a fixed number of
    epochs whose last is kept): epochs trained, the kept epoch's validation loss (mean and
    seed deviation, and its excess over the whole curve's best), the test MSE where known."""
    rows = []
    for (protocol, dataset, horizon, lookback, model), seeds in sorted(
            _full_curve_runs(records).items(), key=str):
        siblings = {seed: _sibling(records, record) for seed, record in seeds.items()}
        length = min(len(record["val_loss_by_epoch"]) for record in seeds.values())
        for name, rule in _rules(patiences, [e for e in fixed_epochs if e <= length]):
            picks, tests, agrees = [], [], []
            for seed, record in sorted(seeds.items()):
                curve = record["val_loss_by_epoch"]
                epochs, best = rule(curve)
                whole_best = early_stop(curve, len(curve))[1]
                picks.append((epochs, best, curve[best], curve[whole_best]))
                sibling = siblings[seed]
                known = {whole_best: record["test_mse"]}
                if sibling is not None:
                    sibling_patience = sibling["run"]["training"]["patience"]
                    sibling_epochs, sibling_best = early_stop(curve, sibling_patience)
                    known.setdefault(sibling_best, sibling["test_mse"])
                    agrees.append(sibling["epochs"] == sibling_epochs)
                tests.append(known.get(best))
            losses = [p[2] for p in picks]
            excess = [100 * (p[2] / p[3] - 1) for p in picks]
            known_tests = [t for t in tests if t is not None]
            rows.append({
                "protocol": protocol, "dataset": dataset, "horizon": horizon,
                "lookback": lookback,
                "row": _base_row(model, seeds), "stopping": name, "n_seeds": len(picks),
                "epochs": statistics.mean(p[0] for p in picks),
                "best_epoch": statistics.mean(p[1] + 1 for p in picks),
                "val_loss": statistics.mean(losses),
                "val_loss_std": statistics.stdev(losses) if len(losses) > 1 else None,
                "val_above_best_pct": statistics.mean(excess),
                "test_mse": (statistics.mean(known_tests)
                             if len(known_tests) == len(tests) else None),
                "test_mse_std": (statistics.stdev(known_tests)
                                 if len(known_tests) == len(tests) > 1 else None),
                "replay_agrees": (f"{sum(agrees)}/{len(agrees)}" if agrees else None)})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=RESULTS / "recipe_runs.jsonl")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rows = patience_rows(load_jsonl(args.runs))
    if not rows:
        raise SystemExit(f"{args.runs} holds no run that trained every epoch: run a "
                         "'..., patience 10' recipe row at --budget full first")
    write_csv(args.out_dir / "patience.csv", rows, COLUMNS)
    write_markdown(args.out_dir / "patience.md", [
        "# Early-stopping patience and fixed epochs, replayed on validation curves", "",
        "Rows of `patience.csv`, from the recipe runs that trained every epoch of their budget "
        "(`python benchmarks/patience.py`). `stopping`: early stopping at a patience, or a "
        "fit without validation that keeps its last epoch; `epochs`: trained; `best_epoch`: "
        "the epoch whose weights are kept (1-based); `val_loss`: its validation loss "
        "(darts' `val_loss`); `val_above_best_pct`: its excess over the best of all the "
        "run's epochs; `test_mse`: where every seed's kept epoch is one a recorded run kept; "
        "`replay_agrees`: seeds whose sibling run at the budget's patience trained the "
        "replayed number of epochs.", "",
        markdown_table(rows, COLUMNS)])


if __name__ == "__main__":
    main()
