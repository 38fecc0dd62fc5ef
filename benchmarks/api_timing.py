"""Wall time of the public darts API as a user runs it, learned against uniform patches, in one
process.

For each patcher, ``ReinPatchModel(input_chunk_length=96, output_chunk_length=96, n_epochs=1,
random_state=0)`` (every other option at its default) fits one epoch on ETTh1's most recent
training windows (``max_samples_per_ts``), then ``historical_forecasts`` runs over the first
stride-1 windows of the validation split (``retrain=False``, ``last_points_only=True``,
``forecast_horizon=96``). The two models alternate over the repeats; each time is a median.

Writes ``benchmarks/results/api_timing.md`` and ``api_timing.csv`` (with the commit and the date).

python benchmarks/api_timing.py              # 2,048 training windows, 1,000 forecasts, 3 repeats
python benchmarks/api_timing.py --quick      # smoke: 256 windows, 50 forecasts, 1 repeat
python benchmarks/api_timing.py --threads 2  # torch threads (default 1)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, git_commit, utc_now, write_csv, write_markdown  # noqa: E402
from _data import DEFAULT_DATA, ltsf_data  # noqa: E402

LOOKBACK = HORIZON = 96
PATCHERS = ("learned", "uniform")


def time_once(patcher: str, train, val, windows: int) -> dict[str, float]:
    """Seconds of one ``fit`` and one ``historical_forecasts`` of a fresh model."""
    from reinpatch_forecast import ReinPatchModel
    from reinpatch_forecast._lightning import quiet_lightning, quiet_trainer_kwargs

    model = ReinPatchModel(input_chunk_length=LOOKBACK, output_chunk_length=HORIZON, n_epochs=1,
                           random_state=0, patcher=patcher,
                           pl_trainer_kwargs=quiet_trainer_kwargs())
    with quiet_lightning():
        began = time.perf_counter()
        model.fit(train, max_samples_per_ts=windows, verbose=False)
        fitted = time.perf_counter()
        forecasts = model.historical_forecasts(val, forecast_horizon=HORIZON, stride=1,
                                               retrain=False, last_points_only=True,
                                               verbose=False)
        done = time.perf_counter()
    return {"fit_s": fitted - began, "forecast_s": done - fitted, "forecasts": len(forecasts)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 256 training windows, 50 forecasts, 1 repeat")
    parser.add_argument("--windows", type=int, help="training windows (default 2048)")
    parser.add_argument("--forecasts", type=int, help="historical forecasts (default 1000)")
    parser.add_argument("--repeats", type=int, help="runs of each model (default 3)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    quick, full = (256, 50, 1), (2048, 1000, 3)
    windows, n_forecasts, repeats = (
        default if given is None else given
        for given, default in zip((args.windows, args.forecasts, args.repeats),
                                  quick if args.quick else full))
    for name, value in (("threads", args.threads), ("windows", windows),
                        ("forecasts", n_forecasts), ("repeats", repeats)):
        if value < 1:
            parser.error(f"--{name} must be >= 1, got {value}")
    if not (Path(args.data_dir) / "ETTh1.csv.gz").is_file():
        parser.error(f"ETTh1.csv.gz is not in {args.data_dir}: pass --data-dir")
    torch.set_num_threads(args.threads)

    data = ltsf_data("ETTh1", LOOKBACK, HORIZON, args.data_dir)
    train = data.series("train")
    val = data.series("val")[:LOOKBACK + HORIZON - 1 + n_forecasts]  # n_forecasts windows
    times = {patcher: [] for patcher in PATCHERS}
    for repeat in range(repeats):  # alternate, so that drifts of a busy machine hit both
        for patcher in PATCHERS if repeat % 2 == 0 else PATCHERS[::-1]:
            print(f"[api_timing] {patcher}, run {repeat + 1}/{repeats} ...", flush=True)
            times[patcher].append(time_once(patcher, train, val, windows))

    rows = [{"model": patcher, "train_windows": windows, "forecasts": runs[0]["forecasts"],
             "repeats": repeats, "threads": args.threads,
             **{key: statistics.median(run[key] for run in runs)
                for key in ("fit_s", "forecast_s")}}
            for patcher, runs in times.items()]
    for row in rows:
        for key in ("fit_s", "forecast_s"):
            row[f"{key[:-2]}_x_uniform"] = row[key] / rows[-1][key]
    write_csv(args.out_dir / "api_timing.csv", rows,
              ["model", "train_windows", "forecasts", "repeats", "threads", "fit_s",
               "fit_x_uniform", "forecast_s", "forecast_x_uniform"])
    command = "python benchmarks/api_timing.py" + (" --quick" if args.quick else "")
    lines = [
        "# The public darts API: learned against uniform patches", "",
        f"Generated by `{command}` on {utc_now()} at commit `{git_commit()}`; "
        f"torch {torch.__version__}, {args.threads} threads. ETTh1 (7 channels), L = H = "
        f"{HORIZON}: `fit` for 1 epoch on the {windows:,} most recent training windows, then "
        f"`historical_forecasts` over {rows[0]['forecasts']:,} validation windows "
        "(`retrain=False`, `last_points_only=True`, stride 1). Medians over "
        f"{repeats} runs of each model, alternating, in one process.", "",
        "| patcher | fit (s) | x uniform | historical forecasts (s) | x uniform |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {r['model']} | {r['fit_s']:.2f} | {r['fit_x_uniform']:.2f} | "
              f"{r['forecast_s']:.2f} | {r['forecast_x_uniform']:.2f} |" for r in rows]
    write_markdown(args.out_dir / "api_timing.md", lines)
    print((args.out_dir / "api_timing.md").read_text())


if __name__ == "__main__":
    main()
