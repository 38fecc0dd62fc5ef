"""Accuracy against the token budget: learned vs uniform patches at several compression rates
(target e: learned below uniform at every R >= 16, learned at 2R at or below uniform at R).

ETTh1 and ETTm1, H in {96, 336} by default (or any dataset of ``reinpatch_forecast.data``,
e.g. ``--datasets EPF_FR_BE --horizons 24``: its target columns); lookback 96 with R in
{4, 8, 16, 32} and lookback 512 with R in {16, 32, 64} (N = ceil(L / R) tokens per series).
At every (dataset, H, L, R) the same network is fitted with uniform patches and with the
learned patcher (the package's default policy, ``density``, unless ``--policy`` says
otherwise), with the budget and the fitting and evaluation code of ``benchmarks/ltsf.py``
(LTSF protocol, early stopping on validation MSE, MSE over every test window).

Writes ``benchmarks/results/compression.md``, ``.csv`` and ``.png`` (test MSE against the token
count N). Runs are cached in ``compression_runs.jsonl``: a stopped run resumes, a cell already
there is skipped; ``--shard 0/2`` and ``--shard 1/2`` split the plan between two processes.

python benchmarks/compression.py                                   # everything (56 fits):
#   ~4 h in one process on 2 cores (L=96 cells ~15 min per dataset and H, L=512 ~50 min)
python benchmarks/compression.py --datasets ETTh1 --horizons 96 --lookbacks 96
python benchmarks/compression.py --datasets EPF_FR_BE --horizons 24   # the event-rich cell
python benchmarks/compression.py --shard 0/2 &  python benchmarks/compression.py --shard 1/2
python benchmarks/compression.py --quick                           # smoke, scratch folder
python benchmarks/compression.py --report-only
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (RESULTS, aggregate_seeds, format_mean_std, set_threads,  # noqa: E402
                     shard, stamp, write_csv, write_markdown)

import ltsf  # noqa: E402

#: Compression rates per lookback.
RATES = {96: (4, 8, 16, 32), 512: (16, 32, 64)}
MODELS = ("uniform", "learned")


def token_count(lookback: int, rate: float) -> int:
    """``N = ceil(L / R)``."""
    return math.ceil(lookback / rate)


def plan(datasets: list[str], horizons: list[int], lookbacks: list[int], models: list[str],
         policy: str, settings_of, seeds: list[int],
         rates: dict[int, tuple] | None = None,
         backbone: str = ltsf.DEFAULT_BACKBONE) -> list[ltsf.RunSpec]:
    """Every fit, cell by cell (dataset, H, L, R), seed by seed; ``settings_of(seed)`` gives
    the training settings of a seed; every row runs on ``backbone`` (a name of
    ``ltsf.BACKBONES``)."""
    rates = rates or RATES
    specs = []
    for dataset in datasets:
        for horizon in horizons:
            for lookback in lookbacks:
                for rate in rates[lookback]:
                    for seed in seeds:
                        settings = settings_of(seed)
                        for model in models:
                            params = ({"R": rate} if model == "uniform" else
                                      {"R": rate, "G": ltsf.DEFAULT_GROUP, "policy": policy})
                            params.update(ltsf.BACKBONES[backbone])
                            specs.append(ltsf.RunSpec(dataset, horizon, model, params, lookback,
                                                      settings))
    return specs


def summarise(records: list[dict]) -> list[dict]:
    """One row per (dataset, H, L, R): uniform and learned test MSE over seeds, and the ratio
    of each learned row to the uniform row of the same backbone (flatten-head rows are named
    with ``ltsf.FLATTEN_SUFFIX``)."""
    flat = []
    for record in records:
        spec = record["spec"]
        name = spec["model"]
        policy = spec["params"].get("policy", ltsf.DEFAULT_POLICY)
        if name == "learned" and policy != ltsf.DEFAULT_POLICY:
            name = f"learned [{spec['params']['policy']}]"
        name += ltsf.backbone_suffix(spec["params"], spec["model"])
        flat.append({**record, **(record.get("patches") or {}), "name": name,
                     "cell": (spec["dataset"], spec["horizon"], spec["lookback"],
                              spec["params"]["R"])})
    summary = aggregate_seeds(flat, lambda r: (r["cell"], r["name"]),
                              ("test_mse", "train_seconds", "grid_distance", "one_step_share"))
    rows = []
    for cell in sorted({c for c, _ in summary}):
        dataset, horizon, lookback, rate = cell
        row = {"dataset": dataset, "horizon": horizon, "lookback": lookback, "R": rate,
               "N": token_count(lookback, rate)}
        for (other, name), values in summary.items():
            if other == cell:
                row[name] = values
        for name, values in row.items():
            suffix = ltsf.FLATTEN_SUFFIX if name.endswith(ltsf.FLATTEN_SUFFIX) else ""
            uniform = row.get("uniform" + suffix)
            if isinstance(values, dict) and not name.startswith("uniform") and uniform:
                values["ratio"] = values["test_mse"] / uniform["test_mse"]
        rows.append(row)
    return rows


def verdict_compression(rows: list[dict]) -> str:
    """Target e on the default backbone: learned below uniform at every R >= 16, and learned
    at 2R at or below uniform at R in at least half of the (dataset, H, L, R) cells that have
    both."""
    def mse(row, name):
        return (row.get(name) or {}).get("test_mse")

    judged = [r for r in rows if r["R"] >= 16 and mse(r, "learned") and mse(r, "uniform")]
    lost = [r for r in judged if mse(r, "learned") >= mse(r, "uniform")]
    by_cell = {(r["dataset"], r["horizon"], r["lookback"], r["R"]): r for r in rows}
    pairs = []
    for (dataset, horizon, lookback, rate), row in sorted(by_cell.items()):
        double = by_cell.get((dataset, horizon, lookback, 2 * rate))
        if double and mse(double, "learned") and mse(row, "uniform"):
            pairs.append((row, double, mse(double, "learned") <= mse(row, "uniform")))
    if not judged or not pairs:
        return "e. compression: **not judged** (no cell with both rows)"
    first = len(lost) == 0
    second = 2 * sum(ok for _, _, ok in pairs) >= len(pairs)
    losses = ", ".join(f"{r['dataset']} H={r['horizon']} L={r['lookback']} R={r['R']} "
                       f"({mse(r, 'learned'):.4f} vs {mse(r, 'uniform'):.4f})" for r in lost)
    return (f"e. compression: learned < uniform at every R >= 16 ({len(judged) - len(lost)} of "
            f"{len(judged)} cells{'; not in ' + losses if lost else ''}); learned at 2R <= "
            f"uniform at R in {sum(ok for _, _, ok in pairs)} of {len(pairs)} cells (half "
            f"needed): **{'met' if first and second else 'NOT met'}**")


def _flat_rows(rows: list[dict]) -> list[dict]:
    """CSV rows: one per (cell, model)."""
    flat = []
    for row in rows:
        cell = {k: row[k] for k in ("dataset", "horizon", "lookback", "R", "N")}
        for name, values in row.items():
            if isinstance(values, dict):
                flat.append({**cell, "model": name, **values})
    return flat


def write_report(records: list[dict], out_dir: Path, settings: dict, quick: bool) -> None:
    rows = summarise(records)
    write_csv(out_dir / "compression.csv", _flat_rows(rows),
              ["dataset", "horizon", "lookback", "R", "N", "model", "test_mse", "test_mse_std",
               "n", "seeds", "ratio", "grid_distance", "one_step_share", "train_seconds"])
    names = sorted({n for r in rows for n, v in r.items() if isinstance(v, dict)},
                   key=lambda n: (n.endswith(ltsf.FLATTEN_SUFFIX), not n.startswith("uniform"),
                                  n))
    learned = [n for n in names if not n.startswith("uniform")]
    command = "python benchmarks/compression.py" + (" --quick" if quick else "")
    lines = [
        "# Compression: test MSE against the token budget, learned vs uniform patches", "",
        stamp(command),
        "Protocol and budget of `benchmarks/ltsf.py` (train-only scaler, stride-1 windows, "
        "every test window, early stopping on validation MSE with the best epoch restored); "
        f"N = ceil(L / R) tokens per series; learned = `ReinPatchModel(patcher='learned')`, "
        f"policy {ltsf.DEFAULT_POLICY} unless named, G = {ltsf.DEFAULT_GROUP}. Mean ± std over "
        "seeds; ratio = "
        "learned / uniform (< 1: learned better); grid distance = mean distance of a decoded "
        "start from the uniform grid (test windows).",
        f"Training settings (seeds aside): `{settings}`.", "",
        "ReinPatch rows run on the package's default backbone (time-aligned `copy` readout "
        f"with the per-step skip); rows named `{ltsf.FLATTEN_SUFFIX.strip()}` ran on the flatten "
        "head over token slots (an ablation, each learned row compared with the uniform row of "
        "its own backbone).", "",
        "The plot of test MSE against N is `compression.png` beside this report.", "",
        "## Target", "", "- " + verdict_compression(rows), "",
        "## Every cell", "",
    ]
    header = ["dataset", "H", "L", "R", "N"] + [f"{n} test MSE" for n in names]
    header += [f"{n} ratio" for n in learned] + [f"{n} grid distance" for n in learned]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [row["dataset"], str(row["horizon"]), str(row["lookback"]), f"{row['R']:g}",
                 str(row["N"])]
        for name in names:
            values = row.get(name)
            cells.append("–" if values is None else
                         format_mean_std(values["test_mse"], values["test_mse_std"], values["n"]))
        for name in learned:
            ratio = (row.get(name) or {}).get("ratio")
            cells.append("–" if ratio is None else f"{ratio:.3f}")
        for name in learned:
            distance = (row.get(name) or {}).get("grid_distance")
            cells.append("–" if distance is None else f"{distance:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    for name in learned:
        ratios = [r[name]["ratio"] for r in rows if "ratio" in (r.get(name) or {})]
        if ratios:
            wins = sum(r < 1 for r in ratios)
            lines += ["", f"`{name}` beats uniform in {wins} of {len(ratios)} cells "
                      f"(mean ratio {np.mean(ratios):.3f}, best {min(ratios):.3f}, worst "
                      f"{max(ratios):.3f})."]
    write_markdown(out_dir / "compression.md", lines, echo=True)
    _plot(rows, [n for n in names if not n.endswith(ltsf.FLATTEN_SUFFIX)], out_dir)


def _plot(rows: list[dict], names: list[str], out_dir: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib comes with darts
        return
    panels = sorted({(r["dataset"], r["horizon"]) for r in rows})
    if not panels:
        return
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.8), squeeze=False)
    for ax, (dataset, horizon) in zip(axes[0], panels):
        for lookback in sorted({r["lookback"] for r in rows}):
            for name in names:
                points = sorted((r["N"], r[name]["test_mse"]) for r in rows
                                if (r["dataset"], r["horizon"], r["lookback"]) ==
                                (dataset, horizon, lookback) and name in r)
                if points:
                    ax.plot(*zip(*points), marker="o", linestyle="-" if name == "uniform"
                            else "--", label=f"{name} L={lookback}")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{dataset} H={horizon}")
        ax.set_xlabel("tokens per series N")
        ax.set_ylabel("test MSE")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "compression.png", dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["ETTh1", "ETTm1"])
    parser.add_argument("--horizons", nargs="+", type=int, default=[96, 336])
    parser.add_argument("--lookbacks", nargs="+", type=int, choices=sorted(RATES),
                        default=sorted(RATES))
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--policy", choices=ltsf.POLICIES, default=ltsf.DEFAULT_POLICY,
                        help=f"policy of the learned rows (default {ltsf.DEFAULT_POLICY})")
    parser.add_argument("--backbone", choices=sorted(ltsf.BACKBONES),
                        default=ltsf.DEFAULT_BACKBONE, help="backbone of every row")
    ltsf.add_training_arguments(parser)
    parser.add_argument("--shard", help="i/n: run every n-th fit from the i-th")
    parser.add_argument("--quick", action="store_true",
                        help="smoke: ETTh1, H=96, (L, R) in {(96, 32), (512, 64)}, 1 epoch, 64 "
                             "windows, to a scratch folder unless --out-dir is given")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--out-dir", type=Path, default=None,
                        help=f"folder of the run cache and the report (default {RESULTS})")
    args = parser.parse_args(argv)
    rates = None
    if args.quick:
        args.datasets, args.horizons, args.lookbacks = ["ETTh1"], [96], [96, 512]
        args.epochs, args.max_train_windows, args.seeds = 1, 64, [0]
        rates = {96: (32,), 512: (64,)}
        args.out_dir = args.out_dir or Path("/tmp/reinpatch_compression_quick")
    args.out_dir = args.out_dir or RESULTS
    set_threads(args.threads)
    cache = args.out_dir / "compression_runs.jsonl"
    specs = plan(args.datasets, args.horizons, args.lookbacks, args.models, args.policy,
                 lambda seed: ltsf.training_settings(args, seed), args.seeds, rates,
                 args.backbone)
    if not args.report_only:
        ltsf.run_missing(shard(specs, args.shard), cache,
                         lambda spec: ltsf.run_one(spec, args), "compression")
    records, settings = ltsf.cached_runs_like(specs, cache)
    write_report(records, args.out_dir, settings, args.quick)


if __name__ == "__main__":
    main()
