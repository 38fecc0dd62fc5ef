"""Where do learned boundaries pay? Uniform vs the offset, density and top-k policies on
generated series, with the same backbone (issue target f).

Two generated data sets, each ``--series`` series of ``--length`` steps (one multivariate
series whose channels the network reads independently):

- ``random_walk``: a Gaussian random walk plus observation noise of the same scale (the case
  where the first policy decoded long first and last patches and beat uniform by 5-10 %);
- ``trend_bursts``: a slow sinusoidal trend with a drift, plus local bursts (3-8 steps of
  large, oscillating values) each followed by a decaying level shift, plus small noise.

Each series is split 70/10/20 in time (val and test include their lookback rows) and scaled
with train-only statistics. ``ReinPatchModel`` is fitted with ``patcher="uniform"`` and with
``patcher="learned"`` under the ``offset``, ``density`` and ``topk`` policies, at the same
backbone and compression rate, for every horizon and seed, with the fitting and evaluation code
of ``benchmarks/ltsf.py`` (early stopping on validation MSE, best epoch restored, MSE over
every test window). The report gives test MSE mean ± std over seeds, its ratio to uniform, and
the decoded patches on test windows (``model.patch_boundaries``): mean first and last patch
length, share of one-step patches, mean distance of a start from the uniform grid.

Runs are cached in ``benchmarks/results/boundaries_runs.jsonl`` (a stopped run resumes);
``--shard 0/2`` and ``--shard 1/2`` split the plan between two processes.

python benchmarks/boundaries.py                  # full (72 fits): ~55 min in one process
python benchmarks/boundaries.py --shard 0/2 &    # the same in two processes: ~30 min
python benchmarks/boundaries.py --shard 1/2      # (measured on a shared 2-core machine:
                                                 # ~27 s a uniform fit, ~55 s a learned one)
python benchmarks/boundaries.py --quick          # smoke: ~1 minute, to a scratch folder
python benchmarks/boundaries.py --report-only
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (RESULTS, aggregate_seeds, append_jsonl, decoded_patch_statistics,  # noqa
                     format_mean_std, load_jsonl, set_threads, shard, stamp, write_csv,
                     write_markdown)

import ltsf  # noqa: E402

TASKS = ("random_walk", "trend_bursts")
MODELS = ("uniform", "offset", "density", "topk")
PATCH_FIELDS = ("first_length", "last_length", "one_step_share", "grid_distance")


# -- data --------------------------------------------------------------------------------------


def random_walk(n_series: int, length: int, rng: np.random.Generator) -> np.ndarray:
    """``(T, C)``: a Gaussian random walk (unit steps) plus unit observation noise."""
    walk = np.cumsum(rng.standard_normal((length, n_series)), axis=0)
    return walk + rng.standard_normal((length, n_series))


def trend_bursts(n_series: int, length: int, rng: np.random.Generator,
                 burst_rate: float = 1 / 60) -> np.ndarray:
    """``(T, C)``: slow trend + drift, local bursts with a decaying level shift, small noise.

    Bursts start at rate ``burst_rate`` per step; a burst lasts 3-8 steps with amplitude
    ``±U(2, 4)`` (an oscillation), then leaves a level shift of half its amplitude that decays
    with a time constant of 10-40 steps.
    """
    t = np.arange(length)[:, None]  # (T, 1)
    period = rng.uniform(300, 600, n_series)
    phase = rng.uniform(0, 2 * np.pi, n_series)
    drift = rng.normal(0, 1 / length, n_series)
    values = 2 * np.sin(2 * np.pi * t / period + phase) + drift * t  # (T, C)
    for c in range(n_series):
        for start in np.flatnonzero(rng.random(length) < burst_rate):
            duration = int(rng.integers(3, 9))
            amplitude = rng.choice([-1, 1]) * rng.uniform(2, 4)
            stop = min(start + duration, length)
            steps = np.arange(stop - start)
            values[start:stop, c] += amplitude * np.cos(np.pi * steps / 2)
            tail = np.arange(length - stop)
            values[stop:, c] += 0.5 * amplitude * np.exp(-tail / rng.uniform(10, 40))
    return values + 0.2 * rng.standard_normal((length, n_series))


GENERATORS = {"random_walk": random_walk, "trend_bursts": trend_bursts}


@dataclass
class Splits:
    """Scaled splits ``(T_split, C)``; val and test include their ``lookback`` rows."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray


def split_and_scale(values: np.ndarray, lookback: int) -> Splits:
    """70/10/20 in time, each series scaled with the mean and std of its training rows."""
    length = values.shape[0]
    train_end, val_end = int(0.7 * length), int(0.8 * length)
    mean = values[:train_end].mean(axis=0)
    std = values[:train_end].std(axis=0)
    scaled = ((values - mean) / np.where(std > 0, std, 1.0)).astype(np.float32)
    return Splits(train=scaled[:train_end], val=scaled[train_end - lookback:val_end],
                  test=scaled[val_end - lookback:])


def make_splits(task: str, n_series: int, length: int, lookback: int, data_seed: int) -> Splits:
    rng = np.random.default_rng([data_seed, TASKS.index(task)])
    return split_and_scale(GENERATORS[task](n_series, length, rng), lookback)


# -- runs --------------------------------------------------------------------------------------


def model_spec(task: str, horizon: int, model: str, lookback: int, rate: float,
               settings: dict) -> ltsf.RunSpec:
    """The ltsf ``RunSpec`` of one fit (the data's size and seed are in ``settings``)."""
    if model == "uniform":
        return ltsf.RunSpec(task, horizon, "uniform", {"R": rate}, lookback, settings)
    return ltsf.RunSpec(task, horizon, "learned",
                        {"R": rate, "G": ltsf.DEFAULT_GROUP, "policy": model}, lookback, settings)


def model_name(record: dict) -> str:
    spec = record["spec"]
    return "uniform" if spec["model"] == "uniform" else spec["params"]["policy"]


def plan(args: argparse.Namespace) -> list[ltsf.RunSpec]:
    specs = []
    for task in args.tasks:
        for horizon in args.horizons:
            for seed in args.seeds:
                settings = {**ltsf.training_settings(args, seed), "series": args.series,
                            "length": args.length, "data_seed": args.data_seed}
                for model in args.models:
                    specs.append(model_spec(task, horizon, model, args.lookback, args.rate,
                                            settings))
    return specs


def run(spec: ltsf.RunSpec, args: argparse.Namespace, splits: Splits) -> dict:
    record, model = ltsf.run_one(spec, args, splits=splits, keep_model=True)
    if "patches" not in record:  # uniform: the grid, read the same way
        record["patches"] = decoded_patch_statistics(model, splits.test, spec.lookback)
    record["seed"] = spec.settings["seed"]
    return record


# -- report ------------------------------------------------------------------------------------


def summarise(records: list[dict]) -> list[dict]:
    """One row per (task, horizon, model): test MSE over seeds, ratio to uniform, patches."""
    flat = [{**r, **(r.get("patches") or {}), "task": r["spec"]["dataset"],
             "horizon": r["spec"]["horizon"], "model": model_name(r)} for r in records]
    summary = aggregate_seeds(flat, lambda r: (r["task"], r["horizon"], r["model"]),
                              ("test_mse",) + PATCH_FIELDS)
    rows = []
    for (task, horizon, model), values in summary.items():
        uniform = summary.get((task, horizon, "uniform"))
        ratio = values["test_mse"] / uniform["test_mse"] if uniform else None
        rows.append({"task": task, "horizon": horizon, "model": model, "ratio": ratio,
                     **values})
    order = {name: i for i, name in enumerate(MODELS)}
    return sorted(rows, key=lambda r: (r["task"], r["horizon"], order.get(r["model"], 99)))


def write_report(records: list[dict], out_dir: Path, settings: dict, quick: bool) -> None:
    rows = summarise(records)
    write_csv(out_dir / "boundaries.csv", rows,
              ["task", "horizon", "model", "test_mse", "test_mse_std", "n", "seeds", "ratio",
               *PATCH_FIELDS])
    command = "python benchmarks/boundaries.py" + (" --quick" if quick else "")
    lines = [
        "# Boundaries on generated series: uniform vs offset, density and top-k policies", "",
        stamp(command),
        "Data: `random_walk` (Gaussian random walk plus unit observation noise) and "
        "`trend_bursts` (slow sinusoidal trend and drift, local 3-8-step bursts each followed "
        "by a decaying level shift, small noise); each series split 70/10/20 in time and "
        "scaled on its training rows. Same backbone for every model; `offset`, `density`, "
        "`topk` are `ReinPatchModel(patcher='learned', policy=...)` (topk: the first policy, an "
        "ablation), G = 4. Fitting and evaluation: `benchmarks/ltsf.py` (early stopping on "
        "validation MSE, best epoch restored, MSE over every test window).",
        f"Settings: `{settings}`.",
        "", "Test MSE mean ± std over seeds; ratio = mean test MSE / uniform's (< 1: the "
        "policy beats uniform). Decoded patches on test windows (`patch_boundaries`): mean "
        "first and last patch length, share of one-step patches, mean distance of a start "
        "from the uniform grid.", "",
    ]
    for task in sorted({r["task"] for r in rows}):
        lines += [f"## {task}", "",
                  "| H | model | test MSE | ratio to uniform | first | last | one-step share | "
                  "grid distance | seeds |", "|---|---|---|---|---|---|---|---|---|"]
        for row in (r for r in rows if r["task"] == task):
            ratio = "–" if row["ratio"] is None else f"{row['ratio']:.3f}"
            patches = ("| – " * 4 if row["first_length"] is None else
                       f"| {row['first_length']:.1f} | {row['last_length']:.1f} | "
                       f"{row['one_step_share']:.2f} | {row['grid_distance']:.2f} ")
            lines.append(f"| {row['horizon']} | {row['model']} | "
                         f"{format_mean_std(row['test_mse'], row['test_mse_std'], row['n'])} | "
                         f"{ratio} {patches}| {row['seeds']} |")
        means = {m: [r["ratio"] for r in rows if r["task"] == task and r["model"] == m
                     and r["ratio"] is not None] for m in MODELS if m != "uniform"}
        text = ", ".join(f"{m} {np.mean(v):.3f}" for m, v in means.items() if v)
        if text:
            lines += ["", f"Mean ratio to uniform over the horizons: {text}."]
        lines.append("")
    write_markdown(out_dir / "boundaries.md", lines, echo=True)


# -- command line ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--horizons", nargs="+", type=int, default=[24, 48, 96])
    parser.add_argument("--lookback", type=int, default=96)
    parser.add_argument("--rate", type=float, default=8, help="compression rate R")
    parser.add_argument("--series", type=int, default=4, help="series per data set")
    parser.add_argument("--length", type=int, default=4000, help="steps per series")
    parser.add_argument("--data-seed", type=int, default=0)
    ltsf.add_training_arguments(parser)
    parser.set_defaults(seeds=[0, 1, 2], epochs=6, max_train_windows=1024)
    parser.add_argument("--shard", help="i/n: run every n-th configuration from the i-th")
    parser.add_argument("--quick", action="store_true",
                        help="smoke: H=24, one seed, 1 epoch, 64 windows, 2 short series, to "
                             "a scratch folder unless --out-dir is given")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--out-dir", type=Path, default=None,
                        help=f"folder of the run cache and the report (default {RESULTS})")
    args = parser.parse_args(argv)
    if args.quick:
        args.horizons, args.seeds, args.epochs = [24], [0], 1
        args.max_train_windows, args.series, args.length = 64, 2, 1200
        args.out_dir = args.out_dir or Path("/tmp/reinpatch_boundaries_quick")
    args.out_dir = args.out_dir or RESULTS
    set_threads(args.threads)
    cache = args.out_dir / "boundaries_runs.jsonl"
    specs = plan(args)
    if not args.report_only:
        data: dict[str, Splits] = {}

        def fit(spec: ltsf.RunSpec) -> dict:
            if spec.dataset not in data:
                data[spec.dataset] = make_splits(spec.dataset, args.series, args.length,
                                                 args.lookback, args.data_seed)
            return run(spec, args, data[spec.dataset])

        ltsf.run_missing(shard(specs, args.shard), cache, fit, "boundaries")
    records, settings = ltsf.cached_runs_like(specs, cache)
    write_report(records, args.out_dir, settings, args.quick)


if __name__ == "__main__":
    main()
