"""Wall time of the public darts API as a user runs it, learned against uniform patches, in one
process: ``ReinPatchModel(input_chunk_length=96, output_chunk_length=96, n_epochs=1)`` fits one
epoch on ETTh1's most recent training windows, then ``historical_forecasts`` runs over the
first stride-1 validation windows (``retrain=False``, ``last_points_only=True``); the models
alternate over the repeats, times are medians. Writes ``results/api_timing.md`` and ``.csv``.

python benchmarks/api_timing.py              # 2,048 training windows, 1,000 forecasts, 3 repeats
python benchmarks/api_timing.py --quick      # smoke: 256 windows, 50 forecasts, 1 repeat
python benchmarks/api_timing.py --lookback 512 --compression-rate 16 --d-model 32
                                             # another setting: results/api_timing_L512.md
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

from reinpatch_forecast import ReinPatchModel  # noqa: E402
from reinpatch_forecast._lightning import quiet_lightning, quiet_trainer_kwargs  # noqa: E402

HORIZON = 96
PATCHERS = ("learned", "uniform")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 256 training windows, 50 forecasts, 1 repeat")
    parser.add_argument("--repeats", type=int, help="runs of each model (default 3)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--lookback", type=int, default=96, help="input_chunk_length (96)")
    parser.add_argument("--compression-rate", type=float, help="default: the model's")
    parser.add_argument("--d-model", type=int, help="default: the model's")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    windows, n_forecasts, repeats = (256, 50, 1) if args.quick else (2048, 1000, 3)
    repeats = repeats if args.repeats is None else args.repeats
    for name, value in (("threads", args.threads), ("repeats", repeats),
                        ("lookback", args.lookback)):
        if value < 1:
            parser.error(f"--{name} must be >= 1, got {value}")
    torch.set_num_threads(args.threads)
    lookback = args.lookback
    sizes = {name: value for name, value in (("compression_rate", args.compression_rate),
                                             ("d_model", args.d_model)) if value is not None}

    data = ltsf_data("ETTh1", lookback, HORIZON, args.data_dir)
    train, val = data.series("train"), data.series("val")[:lookback + HORIZON - 1 + n_forecasts]
    times = {patcher: {"fit_s": [], "forecast_s": []} for patcher in PATCHERS}
    for repeat in range(repeats):  # alternating: a busy machine's drifts hit both models
        for patcher in PATCHERS if repeat % 2 == 0 else PATCHERS[::-1]:
            print(f"[api_timing] {patcher}, run {repeat + 1}/{repeats} ...", flush=True)
            model = ReinPatchModel(input_chunk_length=lookback, output_chunk_length=HORIZON,
                                   n_epochs=1, random_state=0, patcher=patcher, **sizes,
                                   pl_trainer_kwargs=quiet_trainer_kwargs())
            with quiet_lightning():
                began = time.perf_counter()
                model.fit(train, max_samples_per_ts=windows, verbose=False)
                fitted = time.perf_counter()
                forecasts = model.historical_forecasts(
                    val, forecast_horizon=HORIZON, stride=1, retrain=False,
                    last_points_only=True, verbose=False)
            times[patcher]["fit_s"].append(fitted - began)
            times[patcher]["forecast_s"].append(time.perf_counter() - fitted)

    rows = [{"model": patcher, "train_windows": windows, "forecasts": len(forecasts),
             "repeats": repeats, "threads": args.threads,
             **{key: statistics.median(values) for key, values in runs.items()}}
            for patcher, runs in times.items()]
    for row in rows:
        row.update({f"{k[:-2]}_x_uniform": row[k] / rows[-1][k] for k in ("fit_s", "forecast_s")})
    options = ([f"--lookback {lookback}"] if lookback != 96 else []) + [
        f"--{name.replace('_', '-')} {value:g}" for name, value in sizes.items()]
    stem = "api_timing" if not options else f"api_timing_L{lookback}"
    write_csv(args.out_dir / f"{stem}.csv", rows, list(rows[0]))
    command = " ".join(["python benchmarks/api_timing.py", *(["--quick"] if args.quick else []),
                        *options])
    lines = [
        "# The public darts API: learned against uniform patches", "",
        f"Generated by `{command}` on {utc_now()} at commit `{git_commit()}`; torch "
        f"{torch.__version__}, {args.threads} threads. ETTh1 (7 channels), L = {lookback}, "
        f"H = {HORIZON}{''.join(f', {k} = {v:g}' for k, v in sizes.items())}: "
        f"`fit` for 1 epoch on the {windows:,} most recent training windows, then "
        f"`historical_forecasts` over {len(forecasts):,} validation windows (`retrain=False`, "
        f"`last_points_only=True`, stride 1). Medians of {repeats} alternating runs per model.",
        "", "| patcher | fit (s) | x uniform | historical forecasts (s) | x uniform |",
        "|---|---|---|---|---|",
    ] + [f"| {r['model']} | {r['fit_s']:.2f} | {r['fit_x_uniform']:.2f} | "
         f"{r['forecast_s']:.2f} | {r['forecast_x_uniform']:.2f} |" for r in rows]
    write_markdown(args.out_dir / f"{stem}.md", lines)
    print((args.out_dir / f"{stem}.md").read_text())


if __name__ == "__main__":
    main()
