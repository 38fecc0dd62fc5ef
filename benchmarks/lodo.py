"""Leave one dataset out: does the training recipe chosen on six datasets hold on the seventh?

Reads the recipe experiment's records (``results/recipe_runs.jsonl``) at one protocol, on the
cells the experiment runs by default (the five LTSF files at ``H = 96``, ETTh1 also at
``H = 720``, EPF at ``H = 24``, vic_elec at ``H = 48``). A candidate's score in a cell is its
mean validation MSE over the seeds every candidate has there, divided by the best candidate's
(so no dataset weighs more for its scale); a dataset's score is the mean over its cells. For
each dataset, the candidate with the lowest mean score on the other six is the one chosen
without it, and its gap on the left-out dataset is its score there minus one. Test MSE is never
read. Writes ``results/lodo.md`` and ``results/lodo.csv``.

Example
-------
python benchmarks/lodo.py --candidates "Adam, constant lr" "Adam, constant lr, EMA"
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import git_commit, utc_now, write_markdown  # noqa: E402
from specs import EXPERIMENTS  # noqa: E402
from tables import RESULTS, load_jsonl, markdown_table, write_csv  # noqa: E402

#: The recipes compared (3 seeds a cell): darts' constant rate, the per-epoch decay with dropout
#: 0.2, a weight average that warms up (dropout 0.1, 0.2), and the package's default (that
#: average, dropout 0.1, the KL anchor at 0.03; the others ran at 0.1).
CANDIDATES = ("Adam, constant lr", "Adam, lr x0.8 an epoch, dropout 0.2",
              "Adam, constant lr, EMA warmup", "dropout 0.2, EMA warmup",
              "Adam, constant lr, EMA warmup, kl 0.03")
#: The largest gap on a left-out dataset that counts as holding.
TOLERANCE = 0.02


def default_cells() -> list[tuple[str, int, int]]:
    """``(dataset, horizon, lookback)`` of every cell the recipe experiment runs by default."""
    experiment = EXPERIMENTS["recipe"]
    return [(d, h, experiment["lookback"][d]) for d in experiment["datasets"]
            for h in experiment["horizons"][d]]


def cell_scores(records: list[dict], candidates: list[str], protocol: str,
                cells: list[tuple[str, int, int]]) -> dict[tuple, dict[str, float]]:
    """Per cell, each candidate's mean validation MSE over the shared seeds, relative to the
    best candidate's; cells where a candidate has no record are left out (and named)."""
    scores = {}
    for cell in cells:
        seeds = {c: {r["seed"]: r["val_mse"] for r in records
                     if r["model"] == c and r["protocol"] == protocol
                     and (r["dataset"], r["horizon"], r["lookback"]) == cell}
                 for c in candidates}
        if not all(seeds.values()):
            missing = [c for c in candidates if not seeds[c]]
            print(f"skipping {cell}: no records of {missing}")
            continue
        shared = set.intersection(*(set(s) for s in seeds.values()))
        mean = {c: statistics.fmean(v for k, v in s.items() if not shared or k in shared)
                for c, s in seeds.items()}
        best = min(mean.values())
        scores[cell] = {c: mean[c] / best for c in candidates}
    return scores


def leave_one_out(scores: dict[tuple, dict[str, float]], candidates: list[str]) -> list[dict]:
    """One row per dataset: the candidate chosen on the others and its gap on this one."""
    datasets = list(dict.fromkeys(cell[0] for cell in scores))

    def score(candidate: str, keep) -> float:
        per_dataset = [statistics.fmean(s[candidate] for cell, s in scores.items()
                                        if cell[0] == d) for d in datasets if keep(d)]
        return statistics.fmean(per_dataset)

    rows = []
    for held in datasets:
        chosen = min(candidates, key=lambda c: score(c, lambda d: d != held))
        best = min(candidates, key=lambda c: score(c, lambda d: d == held))
        gap = score(chosen, lambda d: d == held) - 1.0
        rows.append({"left_out": held, "chosen_on_the_others": chosen, "best_on_it": best,
                     "gap_pct": 100 * gap, "holds": gap <= TOLERANCE})
    overall = min(candidates, key=lambda c: score(c, lambda d: True))
    rows.append({"left_out": "(none: all seven)", "chosen_on_the_others": overall,
                 "best_on_it": "", "gap_pct": None, "holds": None})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", nargs="+", default=list(CANDIDATES))
    parser.add_argument("--protocol", default="reduced", choices=("reduced", "full"))
    parser.add_argument("--records", type=Path, default=RESULTS / "recipe_runs.jsonl")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    scores = cell_scores(load_jsonl(args.records), args.candidates, args.protocol, default_cells())
    if not scores:
        raise SystemExit("no cell has records of every candidate")
    rows = leave_one_out(scores, args.candidates)
    stamp = {"commit": git_commit(), "date": utc_now(), "protocol": args.protocol}
    rows = [{**row, **stamp} for row in rows]
    columns = ("left_out", "chosen_on_the_others", "best_on_it", "gap_pct", "holds",
               "protocol", "commit", "date")
    write_csv(args.out_dir / "lodo.csv", rows, columns)
    per_cell = [{"cell": f"{d} H={h} L={lb}", **{c: s[c] for c in args.candidates}}
                for (d, h, lb), s in scores.items()]
    write_markdown(args.out_dir / "lodo.md", [
        "# Leave one dataset out: the recipe chosen on six datasets, on the seventh\n\n"
        f"Validation MSE relative to the best candidate of each cell ({args.protocol} "
        f"protocol, mean over the seeds all candidates share; `python benchmarks/lodo.py`"
        f", {stamp['commit']}, {stamp['date']}). A recipe holds when its gap on the "
        f"left-out dataset is at most {100 * TOLERANCE:g} %.\n\n"
        + markdown_table(rows, columns[:5]) + "\n\n## Per cell\n\n"
        + markdown_table(per_cell, ("cell", *args.candidates))])


if __name__ == "__main__":
    main()
