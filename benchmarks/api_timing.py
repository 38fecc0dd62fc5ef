"""Wall time of the public darts API as a user runs it, learned against uniform patches, in one
process, for three shapes of data cut from ETTh1: its seven channels as one multivariate series,
its oil temperature (OT) alone, and a panel of 100 one-channel series of 400 hours (cut from the
seven channels of the training split). ``ReinPatchModel(input_chunk_length=96,
output_chunk_length=96, n_epochs=1)`` fits one epoch on about 2,048 training windows (the most
recent ones; 21 per panel series), then ``historical_forecasts`` runs over 1,000 stride-1
windows (``retrain=False``, ``last_points_only=True``; the first validation windows, or the
last 10 of every panel series). The two patchers alternate over the repeats (a busy machine's
drift hits both); times are medians. Writes ``results/api_timing.md`` and ``.csv``.

python benchmarks/api_timing.py              # every shape: 3 repeats
python benchmarks/api_timing.py --quick      # smoke: 256 windows, 50 forecasts, 1 repeat
python benchmarks/api_timing.py --shapes "one series"
python benchmarks/api_timing.py --lookback 512 --compression-rate 16 --d-model 32
                                             # another setting: results/api_timing_L512.md
"""

from __future__ import annotations

import argparse
import math
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
#: The shapes of data timed, in the table's order.
SHAPES = ("seven channels", "one series", "panel")
#: Series and hours of the panel.
PANEL_SERIES, PANEL_HOURS = 100, 400
OT = 6  # ETTh1's oil temperature column


def shape_data(shape: str, data, lookback: int, windows: int, n_forecasts: int) -> dict:
    """What ``fit`` and ``historical_forecasts`` read for ``shape``: the training series (one
    or a list), ``max_samples_per_ts``, the series forecast over and its ``start`` arguments."""
    from darts import TimeSeries

    train, val = data.arrays["train"], data.arrays["val"]  # (T, 7) each, scaled
    if shape != "panel":
        columns = slice(None) if shape == "seven channels" else slice(OT, OT + 1)
        return {"train": TimeSeries.from_values(train[:, columns]), "per_series": windows,
                "forecast": TimeSeries.from_values(
                    val[:lookback + HORIZON - 1 + n_forecasts, columns]), "start": {}}
    pieces = [train[start:start + PANEL_HOURS, channel]
              for channel in range(train.shape[1])
              for start in range(0, len(train) - PANEL_HOURS + 1, PANEL_HOURS)][:PANEL_SERIES]
    if len(pieces) < PANEL_SERIES:
        raise ValueError(f"ETTh1's training split holds {len(pieces)} series of "
                         f"{PANEL_HOURS} hours, fewer than {PANEL_SERIES}")
    panel = [TimeSeries.from_values(piece[:, None]) for piece in pieces]
    per_series = math.ceil(windows / PANEL_SERIES)
    forecasts = max(1, n_forecasts // PANEL_SERIES)
    return {"train": panel, "per_series": per_series, "forecast": panel, "start": {
        "start": PANEL_HOURS - HORIZON - forecasts + 1, "start_format": "position"}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 256 training windows, 50 forecasts, 1 repeat")
    parser.add_argument("--repeats", type=int, help="runs of each model (default 3)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--lookback", type=int, default=96, help="input_chunk_length (96)")
    parser.add_argument("--compression-rate", type=float, help="default: the model's")
    parser.add_argument("--d-model", type=int, help="default: the model's")
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES),
                        help="shapes of data to time (default: all)")
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
    rows = []
    for shape in args.shapes:
        inputs = shape_data(shape, data, lookback, windows, n_forecasts)
        times = {patcher: {"fit_s": [], "forecast_s": []} for patcher in PATCHERS}
        for repeat in range(repeats):  # alternating: a busy machine's drifts hit both models
            for patcher in PATCHERS if repeat % 2 == 0 else PATCHERS[::-1]:
                print(f"[api_timing] {shape}, {patcher}, run {repeat + 1}/{repeats} ...",
                      flush=True)
                model = ReinPatchModel(input_chunk_length=lookback,
                                       output_chunk_length=HORIZON, n_epochs=1, random_state=0,
                                       patcher=patcher, **sizes,
                                       pl_trainer_kwargs=quiet_trainer_kwargs())
                with quiet_lightning():
                    began = time.perf_counter()
                    model.fit(inputs["train"], max_samples_per_ts=inputs["per_series"],
                              verbose=False)
                    fitted = time.perf_counter()
                    forecasts = model.historical_forecasts(
                        inputs["forecast"], forecast_horizon=HORIZON, stride=1, retrain=False,
                        last_points_only=True, verbose=False, **inputs["start"])
                times[patcher]["fit_s"].append(fitted - began)
                times[patcher]["forecast_s"].append(time.perf_counter() - fitted)
        train = inputs["train"] if isinstance(inputs["train"], list) else [inputs["train"]]
        made = forecasts if isinstance(forecasts, list) else [forecasts]
        for patcher, runs in times.items():
            rows.append({
                "shape": shape, "model": patcher, "series": len(train),
                "channels": train[0].n_components,
                "train_windows": sum(min(inputs["per_series"], len(s) - lookback - HORIZON + 1)
                                     for s in train),
                "forecasts": sum(len(f) for f in made), "repeats": repeats, "threads": args.threads,
                **{key: statistics.median(values) for key, values in runs.items()}})

    uniform = {row["shape"]: row for row in rows if row["model"] == "uniform"}
    for row in rows:
        row.update({f"{k[:-2]}_x_uniform": row[k] / uniform[row["shape"]][k]
                    for k in ("fit_s", "forecast_s")})
    options = ([f"--lookback {lookback}"] if lookback != 96 else []) + [
        f"--{name.replace('_', '-')} {value:g}" for name, value in sizes.items()]
    stem = "api_timing" if not options else f"api_timing_L{lookback}"
    write_csv(args.out_dir / f"{stem}.csv", rows, list(rows[0]))
    command = " ".join(["python benchmarks/api_timing.py", *(["--quick"] if args.quick else []),
                        *options])
    lines = [
        "# The public darts API: learned against uniform patches, per shape of data", "",
        f"Generated by `{command}` on {utc_now()} at commit `{git_commit()}`; torch "
        f"{torch.__version__}, {args.threads} threads. ETTh1, L = {lookback}, "
        f"H = {HORIZON}{''.join(f', {k} = {v:g}' for k, v in sizes.items())}: `fit` for 1 "
        "epoch on the most recent training windows, then `historical_forecasts` "
        "(`retrain=False`, `last_points_only=True`, stride 1). Shapes: `seven channels` (one "
        "multivariate series), `one series` (OT alone), `panel` (one-channel series of "
        f"{PANEL_HOURS} hours cut from the training split's channels, the last "
        f"{max(1, n_forecasts // PANEL_SERIES)} windows of each forecast). Medians of "
        f"{repeats} runs per model, the two models alternating in one process; on a machine "
        "shared with other work only these paired ratios (`x uniform`) compare, not the seconds.",
        "", "| shape | series x channels | train windows | forecasts | patcher | fit (s) | "
        "x uniform | historical forecasts (s) | x uniform |",
        "|---|---|---|---|---|---|---|---|---|",
    ] + [f"| {r['shape']} | {r['series']} x {r['channels']} | {r['train_windows']:,} | "
         f"{r['forecasts']:,} | {r['model']} | {r['fit_s']:.2f} | {r['fit_x_uniform']:.2f} | "
         f"{r['forecast_s']:.2f} | {r['forecast_x_uniform']:.2f} |" for r in rows]
    write_markdown(args.out_dir / f"{stem}.md", lines)


if __name__ == "__main__":
    main()
