"""The subcommands: ``demo``, ``fit``, ``pretrain-patcher``, ``predict`` and ``segment``.

Each takes the parsed arguments and returns the exit code; darts, torch and matplotlib are
imported inside them, so that ``--help`` stays quick.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..checks import pad_future_covariates
from ..options import option_names
from ._common import CLIError, make_parent, one_line, output_path, quiet, save_figure, \
    trainer_kwargs
from .csv_input import covariate_rows, read_csv
from .saved_model import check_length, check_overlap, covariates_text, model_and_data


def run_demo_command(args: argparse.Namespace) -> int:
    """``reinpatch-forecast demo``: the ETTh1 table and finding, the spike task's, then figures
    of the learned models."""
    from ..plotting import plot_boundary_statistics, plot_forecast, plot_segmentation
    from .demo import (demo_splits, grid_title, learned_vs_uniform, run_demo, run_spike_task,
                       spike_boundaries, spike_finding, spike_title)

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CLIError(f"--out {args.out} is a file; give a folder")
    out.mkdir(parents=True, exist_ok=True)

    with quiet():
        results = run_demo(args.lookback, args.horizon, args.epochs, args.max_windows,
                           args.seed, verbose=not args.quiet)
    print(f"\nETTh1, lookback {args.lookback}, horizon {args.horizon}, {args.epochs} epochs: "
          "validation split, every horizon-th window, scaled data")
    print(f"{'model':<22}{'MSE':>8}{'MAE':>8}{'fit (s)':>10}")
    for r in results:
        print(f"{r.name:<22}{r.mse:>8.4f}{r.mae:>8.4f}{r.seconds:>10.1f}")
    print(learned_vs_uniform(results))

    spike = {patcher: run_spike_task(patcher, steps=args.spike_steps, seed=args.seed)
             for patcher in ("learned", "uniform")}
    print(f"\nSpike task (noise with one spike at a random position; target: its amplitude), "
          f"{args.spike_steps} training steps, 2,000 test windows")
    print(f"{'patcher':<22}{'MSE':>8}{'starts at spike':>17}{'fit (s)':>10}")
    for r in spike.values():
        print(f"{r.patcher:<22}{r.mse:>8.4f}{r.near_spike:>17.0%}{r.seconds:>10.1f}")
    print(spike_finding(spike["learned"], spike["uniform"]))

    # The figures show the models the tables scored, not retrained ones.
    learned = next(r.model for r in results if r.patcher == "learned")
    _, val = demo_splits(args.lookback, args.horizon)
    context, actual = val[:-args.horizon], val[-args.horizon:]
    with quiet():
        forecast = learned.predict(args.horizon, series=context, verbose=False)
        last = learned.patch_boundaries(context)
        cutoffs = np.unique(np.linspace(args.lookback, len(val), 64).astype(int))
        windows = learned.patch_boundaries([val[:int(t)] for t in cutoffs])

    paths = {
        "forecast": out / "forecast.png",
        "segmentation": out / "segmentation.png",
        "boundary statistics": out / "boundary_statistics.png",
        "spike task segmentation": out / "spike_segmentation.png",
    }
    save_figure(plot_forecast(context, forecast, actual=actual, max_history=args.lookback,
                              title="ReinPatch (learned patcher) on the last ETTh1 validation "
                              "window (scaled)"), paths["forecast"])
    title = (f"{grid_title(windows, 'ETTh1')}\n({len(windows)} validation windows; drawn: "
             "the last, scaled)")
    save_figure(plot_segmentation(last, title=title), paths["segmentation"])
    save_figure(plot_boundary_statistics(
        windows, title=f"Learned boundaries over {len(windows)} ETTh1 validation windows x "
                       f"{val.width} channels"), paths["boundary statistics"])
    save_figure(plot_segmentation(spike_boundaries(spike["learned"]),
                                  title=spike_title(spike["learned"], spike["uniform"])),
                paths["spike task segmentation"])
    print()
    for name, path in paths.items():
        print(f"wrote {name}: {path}")
    return 0


def fit_command(args: argparse.Namespace) -> int:
    from ..darts import ReinPatchModel

    kinds = {"past": args.past_covariates, "future": args.future_covariates}
    check_overlap(args.target, kinds)
    data = read_csv(args.csv, args.date_column, args.target, args.freq,
                    {f"--{kind}-covariates column(s)": cols for kind, cols in kinds.items()})
    series = data.series
    check_length(series, args.lookback + args.horizon, args.csv,
                 f"fit with --lookback {args.lookback} and --horizon {args.horizon}")
    covariates = {
        f"{kind}_covariates": covariate_rows(data, kind, cols, 0, data.end, "fit")
        for kind, cols in kinds.items() if cols
    }
    out = output_path(args.out)
    model = ReinPatchModel(
        input_chunk_length=args.lookback,
        output_chunk_length=args.horizon,
        **{name: getattr(args, name) for name in option_names()},
        batch_size=args.batch_size,
        n_epochs=args.epochs,
        optimizer_kwargs={"lr": args.learning_rate},
        random_state=args.seed,
        pl_trainer_kwargs=trainer_kwargs(args),
    )
    began = time.perf_counter()
    with quiet():
        model.fit(series, **covariates, verbose=not args.quiet)
    seconds = time.perf_counter() - began
    make_parent(out)
    try:
        model.save(str(out))
    except OSError as error:
        raise CLIError(f"cannot write the model to {args.out}: {one_line(error)}") from None
    config = model.model.network.config
    network = model.model.network
    policy = (f" ({network.patcher.policy_name} policy)" if config.patcher.name == "learned"
              else "")
    print(f"trained on {len(series)} rows x {series.width} column(s) "
          f"({', '.join(series.components)}) in {seconds:.1f} s: {args.patcher} patcher"
          f"{policy}, {config.n_patches} patches per window of {args.lookback}"
          f"{covariates_text(kinds)}")
    print(f"saved the model to {out} (and {out}.ckpt)")
    return 0


def pretrain_patcher_command(args: argparse.Namespace) -> int:
    import torch

    from ..foundation import default_corpus, pretrain_patcher
    from ..patcher_io import file_sha256, save_patcher

    out = output_path(args.out)
    if args.data_dir is not None and not Path(args.data_dir).is_dir():
        raise CLIError(f"--data-dir {args.data_dir} is not a folder (it should hold the LTSF "
                       "CSVs, e.g. ETTh1.csv.gz); omit it to leave the LTSF series out.")
    if args.threads:
        torch.set_num_threads(args.threads)
    corpus = default_corpus(args.data_dir, random_state=args.seed)
    print(f"corpus: {len(corpus)} series, {sum(len(v) for v in corpus.values())} steps"
          + ("" if args.data_dir else " (no LTSF training splits: --data-dir not given)"))
    began = time.perf_counter()
    with quiet():
        result = pretrain_patcher(
            corpus, input_chunk_length=args.lookback, output_chunk_length=args.horizon,
            compression_rate=args.compression_rate, group_size=args.group_size,
            scored_share=args.scored_share, n_epochs=args.epochs,
            max_windows_per_series=args.max_windows,
            kl_coef=args.kl_coef, decode_margin=args.decode_margin, random_state=args.seed,
            verbose=not args.quiet,
        )
    seconds = time.perf_counter() - began
    for epoch in result.history:
        print(f"epoch {epoch.epoch}: reward {epoch.reward:.4f}, val MSE {epoch.val_mse:.4f}")
    make_parent(out)
    try:
        save_patcher(result.patcher, out)
    except OSError as error:
        raise CLIError(f"cannot write the patcher to {args.out}: {one_line(error)}") from None
    print(f"pretrained on {result.n_train_windows} windows per epoch in {seconds:.0f} s")
    print(f"saved the patcher to {out} (SHA-256 {file_sha256(out)})")
    return 0


def predict_command(args: argparse.Namespace) -> int:
    from ..plotting import plot_forecast

    model, targets, kinds, data = model_and_data(args)
    series = data.series
    lookback, horizon = model.input_chunk_length, model.output_chunk_length
    n = args.n if args.n is not None else horizon
    purpose = f"the forecast of {n} step(s)"
    covariates = {}
    if kinds["past"]:
        # beyond the horizon, darts feeds forecasts back in and reads n - H future past values
        covariates["past_covariates"] = covariate_rows(
            data, "past", kinds["past"], data.end - lookback, data.end + max(0, n - horizon),
            purpose, hint=f", or forecast at most the model's horizon (--n {horizon})",
        )
    if kinds["future"]:
        future = covariate_rows(data, "future", kinds["future"], data.end - lookback,
                                data.end + n, purpose)
        if n < horizon:
            # darts wants the future covariates of a whole horizon; the steps after n are not
            # returned, so they take the last known values
            padded = pad_future_covariates(future.values(), lookback + horizon)
            future = future.append_values(padded[len(future):])
        covariates["future_covariates"] = future
    out = output_path(args.out)
    with quiet():
        forecast = model.predict(n, series=series, **covariates, verbose=False)
    frame = pd.DataFrame(forecast.values(copy=False), columns=list(forecast.components))
    frame.insert(0, args.date_column, forecast.time_index)
    make_parent(out)
    try:
        frame.to_csv(out, index=False)
    except OSError as error:
        raise CLIError(f"cannot write {args.out}: {one_line(error)}") from None
    print(f"wrote {n} forecast step(s) of {', '.join(targets)} from "
          f"{forecast.start_time()} to {forecast.end_time()}{covariates_text(kinds)}: {out}")
    if args.plot:
        plot_path = output_path(args.plot)
        save_figure(plot_forecast(series, forecast, max_history=4 * model.input_chunk_length),
                    plot_path)
        print(f"wrote the forecast plot: {plot_path}")
    return 0


def segment_command(args: argparse.Namespace) -> int:
    from ..plotting import plot_segmentation

    model, targets, _, data = model_and_data(args, covariates=False)
    series = data.series
    out = output_path(args.out)
    with quiet():
        boundaries = model.patch_boundaries(series)
    save_figure(plot_segmentation(boundaries), out)
    for name, row in zip(boundaries.components, boundaries.starts):
        print(f"{name}: patches start at {row.tolist()}")
    print(f"wrote the segmentation plot of the last {model.input_chunk_length} rows: {out}")
    return 0
