"""The one table writer: run records (JSONL, one line per run) -> report rows -> CSV and markdown.

A run record is a flat dict: the row's identity (the :class:`Table`'s ``keys``), ``seed``, the
measured fields, ``commit`` and ``date``, and optionally

- ``pick``: the record is a candidate of a row picked on validation MSE (a tuned patch size, a
  peer's learning rate): ``{"group": str, "row": str, "of": int, "keep": bool,
  "partial_row": str (optional), "set": dict (optional)}``. Among the candidates of one group in
  one cell (the keys but the last), the one with the lowest mean validation MSE over the seeds
  every candidate has becomes a row named ``row`` (``partial_row`` when fewer than ``of``
  candidates ran; no row without one); ``set`` adds columns to it; ``keep=False`` hides the
  candidates' own rows; ``over``: keys the contest spans (a row chosen among lookbacks), which
  the picked row takes from the winner. ``pick`` may be a list: a candidate of several rows
  (a peer's learning rate at one lookback, and the lookback).
- ``reference``: the model (last key) of the row its ratio divides by, in the same cell.

Rows aggregate the records of one identity over seeds (a seed run twice: the later record).
"""

from __future__ import annotations

import csv
import json
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Table:
    """How the records of one experiment become report rows.

    Attributes
    ----------
    keys
        Columns that identify a row; the last one names the model.
    columns
        The CSV's columns, in order.
    mean
        Fields averaged over seeds (mean over the records that have them); ``None``: every
        column but the keys, ``n``, ``seeds``, the ratios, ``*_std``, ``commit`` and ``date``.
    std
        Fields whose sample standard deviation over seeds goes to ``<field>_std``.
    n
        Column of the number of seeds (the seeds themselves go to ``seeds``).
    ratio
        Column of ``metric / reference row's metric`` (``None``: no ratio).
    ratio_on_reference
        Whether the reference row gets its own ratio (1.0).
    gap_percent
        Write the ratio as a percentage gap, ``100 * (ratio - 1)``.
    reference_std
        Column of the reference row's ``<metric>_std`` (``None``: none).
    metric
        The field ratios and picks compare (picks always choose on ``val_mse``).
    defaults
        Values of keys that older records lack (a key added to a table later).
    title
        The markdown report's heading.
    """

    keys: tuple[str, ...]
    columns: tuple[str, ...]
    mean: tuple[str, ...] | None = None
    std: tuple[str, ...] = ("test_mse",)
    n: str = "n_seeds"
    ratio: str | None = None
    ratio_on_reference: bool = False
    gap_percent: bool = False
    reference_std: str | None = None
    metric: str = "test_mse"
    defaults: dict[str, Any] = field(default_factory=dict)
    title: str = ""

    def __post_init__(self) -> None:
        if self.mean is None:
            derived = (*self.keys, self.n, "seeds", self.ratio, self.reference_std, "commit",
                       "date")
            object.__setattr__(self, "mean", tuple(
                c for c in self.columns if c not in derived and not c.endswith("_std")))


def load_jsonl(path: Path) -> list[dict]:
    """The records of a JSONL file, in file order (no file: none)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def append_jsonl(record: dict, path: Path) -> None:
    """Append one record as one line (processes sharing the file append whole lines)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")


def _std(values: Sequence[float]) -> float | None:
    if not values:
        return None
    return statistics.stdev(values) if len(values) > 1 else 0.0


def aggregate(runs: Sequence[dict], table: Table) -> dict[str, Any]:
    """One row from the records of one identity, one record per seed."""
    row: dict[str, Any] = {key: runs[0][key] for key in table.keys}
    seeds = sorted(r["seed"] for r in runs)
    row[table.n] = len(runs)
    row["seeds"] = " ".join(map(str, seeds))
    for name in dict.fromkeys(table.mean + table.std):
        values = [float(r[name]) for r in runs if r.get(name) is not None]
        row[name] = statistics.fmean(values) if values else None
        if name in table.std:
            row[f"{name}_std"] = _std(values)
    row["commit"] = "/".join(sorted({r["commit"] for r in runs}))
    row["date"] = max(r.get("date", "") for r in runs)
    return row


def by_identity(records: Iterable[dict], table: Table) -> dict[tuple, list[dict]]:
    """Records grouped by row identity, one per seed (the later date, then the later line)."""
    groups: dict[tuple, dict[int, dict]] = {}
    for record in sorted(records, key=lambda r: r.get("date", "")):
        groups.setdefault(tuple(record[k] for k in table.keys), {})[record["seed"]] = record
    return {key: [by_seed[s] for s in sorted(by_seed)] for key, by_seed in groups.items()}


def pick_on_validation(candidates: Sequence[Sequence[dict]]) -> int:
    """Index of the candidate (its records, one per seed) with the lowest mean validation MSE
    over the seeds every candidate has (each on all of its own where they share none)."""
    if not candidates:
        raise ValueError("no candidate to pick from")
    common = set.intersection(*({r["seed"] for r in group} for group in candidates))
    shared = [[r for r in group if r["seed"] in common] or group for group in candidates]
    scores = [statistics.fmean(r["val_mse"] for r in group) for group in shared]
    return min(range(len(scores)), key=scores.__getitem__)


def _picks(record: dict) -> list[dict]:
    """The picks a record takes part in (a record may be a candidate of several rows)."""
    pick = record.get("pick")
    return [] if not pick else list(pick) if isinstance(pick, list) else [pick]


def report_rows(records: Iterable[dict], table: Table) -> list[dict]:
    """The report's rows: seeds aggregated, picked rows added, ratios to reference rows."""
    records = [{**table.defaults, **r} for r in records]
    groups = by_identity(records, table)
    rows = {key: aggregate(runs, table) for key, runs in groups.items()}
    hidden: set[tuple] = set()
    contests: dict[tuple, list[tuple]] = {}
    for key, runs in groups.items():
        for pick in _picks(runs[-1]):
            spanned = set(pick.get("over", ()))
            cell = tuple(v for k, v in zip(table.keys[:-1], key) if k not in spanned)
            contests.setdefault((cell, pick["group"]), []).append(key)
            if not pick.get("keep", True):
                hidden.add(key)
    picked = []
    for (cell, group), keys in sorted(contests.items(), key=str):
        keys = sorted(keys, key=str)
        best = keys[pick_on_validation([groups[k] for k in keys])]
        pick = next(p for p in _picks(groups[best][-1]) if p["group"] == group)
        name = pick["row"] if len(keys) >= pick["of"] else pick.get("partial_row")
        if name is not None:
            picked.append({**rows[best], **pick.get("set", {}), table.keys[-1]: name})
    out = [row for key, row in rows.items() if key not in hidden] + picked
    if table.ratio or table.reference_std:
        _add_ratios(out, groups, table)
    return sorted(out, key=lambda row: tuple(_sortable(row[k]) for k in table.keys))


def _add_ratios(rows: list[dict], groups: dict[tuple, list[dict]], table: Table) -> None:
    found = {tuple(row[k] for k in table.keys): row for row in rows}
    for key, runs in groups.items():
        reference = runs[-1].get("reference")
        row, base = found.get(key), found.get(key[:-1] + (reference,))
        if reference is None or row is None or base is None:
            continue
        if table.reference_std:
            row[table.reference_std] = base[f"{table.metric}_std"]
        if table.ratio and (table.ratio_on_reference or reference != key[-1]):
            ratio = row[table.metric] / base[table.metric]
            row[table.ratio] = 100 * (ratio - 1) if table.gap_percent else ratio


def _sortable(value: Any) -> tuple:
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))


def write_csv(path: Path, rows: Sequence[dict], columns: Sequence[str]) -> None:
    """Rows as CSV with exactly ``columns`` (a missing or ``None`` value: empty)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({c: "" if row.get(c) is None else row[c] for c in columns})


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) >= 1000 else f"{value:.4f}"
    return str(value).replace("|", "\\|")


def markdown_table(rows: Sequence[dict], columns: Sequence[str]) -> str:
    """A GitHub markdown table of ``columns`` (floats with four decimals)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(row.get(c)) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def write_report(name: str, table: Table, records: Iterable[dict], out_dir: Path = RESULTS,
                 markdown: str | None = None, extra: Sequence[dict] = ()) -> list[dict]:
    """``<name>.csv`` and its markdown table (``markdown``, default ``<name>.md``) from the
    records and the ``extra`` rows (built elsewhere); returns the rows."""
    rows = sorted([*report_rows(records, table), *extra],
                  key=lambda row: tuple(_sortable(row[k]) for k in table.keys))
    write_csv(out_dir / f"{name}.csv", rows, table.columns)
    shown = [c for c in table.columns if c not in ("commit", "date")]
    text = (f"# {table.title or name}\n\nRows of `{name}.csv`, built from `{name}_runs.jsonl` "
            "by `python benchmarks/run.py report` (each row's commit and date are in the "
            "CSV).\n\n" + markdown_table(rows, shown) + "\n")
    (out_dir / (markdown or f"{name}.md")).write_text(text)
    return rows


def _short_name(model: str) -> str:
    """A row's model without the learning rate its pick chose (``dlinear (lr=0.0001)``, or
    ``(lr=0.0001, untuned)`` where one rate ran); other suffixes name other rows."""
    return re.sub(r" \(lr=[^,)]*(, untuned)?\)$", "", model)


def summary_rows(rows: Sequence[dict], models: Sequence[str],
                 published: dict[str, tuple[str, dict]], horizons: Sequence[int],
                 protocol: str, dataset: str) -> list[dict]:
    """One row per model and lookback (test MSE per horizon and their mean where every horizon
    ran), ours first, then the published rows of ``dataset``."""
    ours: dict[tuple, dict] = {}
    for row in rows:
        model = _short_name(row["model"])
        if row["protocol"] != protocol or row["dataset"] != dataset or model not in models:
            continue
        # a row that picks the lookback per horizon is one line, its lookbacks listed
        chosen = model.endswith("(L by validation)")
        entry = ours.setdefault((models.index(model), 0 if chosen else row["lookback"]),
                                {"model": model, "L": row["lookback"]})
        if chosen:
            picked = entry.setdefault("picked", {})
            picked[row["horizon"]] = row["lookback"]
            lookbacks = [str(picked[h]) for h in sorted(picked)]
            entry["L"] = " / ".join(lookbacks) if len(set(lookbacks)) > 1 else lookbacks[0]
        entry[str(row["horizon"])] = row["test_mse"]
        entry["seeds"] = min(entry.get("seeds", row["n_seeds"]), row["n_seeds"])
    out = [ours[k] for k in sorted(ours)]
    for label, (lookback, numbers) in published.items():
        if dataset in numbers:
            values = numbers[dataset]
            entry = {"model": f"{label} (published)", "L": lookback}
            entry.update(values if isinstance(values, dict)
                         else dict(zip(map(str, horizons), values)))
            out.append(entry)
    for entry in out:
        if all(str(h) in entry for h in horizons):
            entry["avg"] = statistics.fmean(entry[str(h)] for h in horizons)
    return out


def write_summary(name: str, title: str, rows: Sequence[dict], models: Sequence[str],
                  published: dict[str, tuple[str, dict]], horizons: Sequence[int],
                  out_dir: Path = RESULTS, rows_file: str = "") -> None:
    """``<name>.md``: per protocol and dataset, our rows beside published ones (every row of
    ``<name>.csv`` is in ``rows_file``)."""
    columns = ("model", "L", *map(str, horizons), "avg", "seeds")
    parts = [f"# {title}: test MSE per horizon, ours beside published numbers\n\nBuilt from "
             f"`{name}.csv` by `python benchmarks/run.py report`; every row of it, with seed "
             f"deviations, MAE and epochs, is in `{rows_file}`. Ours: every test window, the "
             "mean over `seeds` seeds (the fewest of the row's horizons); `avg` where all four "
             "horizons ran. Published rows come from other code (their sources: `PUBLISHED` in "
             "`benchmarks/specs.py`); some truncated the test set.\n"]
    for protocol in ("full", "reduced"):
        datasets = list(dict.fromkeys(r["dataset"] for r in rows if r["protocol"] == protocol))
        for dataset in datasets:
            table = summary_rows(rows, models, published, horizons, protocol, dataset)
            if any("(published)" not in r["model"] for r in table):
                parts.append(f"\n## {dataset}, {protocol} protocol\n\n"
                             + markdown_table(table, columns) + "\n")
    (out_dir / f"{name}.md").write_text("".join(parts))
