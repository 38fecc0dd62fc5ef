"""Regenerate the figures in docs/_static (``make -C docs figures``; a few minutes on a CPU).

Trains the demo's learned model (``reinpatch_forecast.cli.demo.demo_model``: L = 96, H = 24,
the package's defaults but ``d_model=32``; 4 epochs of the 2048 most recent windows of the
ETTh1 training split, seed 0) and the demo's spike task
(``reinpatch_forecast.cli.demo.run_spike_task``, learned and uniform patches, seed 0), then
draws

- ``segmentation.png``: the patches of the last ETTh1 validation input window, channels HUFL
  and OT, titled with where the starts sit against the uniform grid over 64 validation windows;
- ``spike_segmentation.png``: the learned patches of three spike-task test windows;
- ``boundary_statistics.png``: boundary statistics over 64 ETTh1 validation windows, all
  channels, with the shift of the starts from the uniform grid.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from reinpatch_forecast.cli.demo import (demo_model, demo_splits, grid_title, run_spike_task,
                                         spike_boundaries, spike_title)
from reinpatch_forecast.plotting import plot_boundary_statistics, plot_segmentation

STATIC = Path(__file__).resolve().parent.parent / "_static"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--max-windows", type=int, default=2048)
    parser.add_argument("--spike-steps", type=int, default=200)
    parser.add_argument("--out", type=Path, default=STATIC)
    args = parser.parse_args()
    lookback, horizon = 96, 24
    train, val = demo_splits(lookback, horizon)
    model = demo_model("learned", lookback, horizon, args.epochs, seed=0)
    model.fit(train, max_samples_per_ts=args.max_windows)
    cutoffs = np.unique(np.linspace(lookback, len(val), 64).astype(int))
    windows = model.patch_boundaries([val[: int(t)] for t in cutoffs])
    args.out.mkdir(parents=True, exist_ok=True)
    figure = plot_segmentation(
        model.patch_boundaries(val[:-horizon]), components=["HUFL", "OT"], figsize=(9.0, 4.2),
        title=f"{grid_title(windows, 'ETTh1')}\n(64 validation windows; drawn: the last, "
              f"L = {lookback}, {model.model.network.config.n_patches} patches)",
    )
    figure.savefig(args.out / "segmentation.png", dpi=90)
    figure = plot_boundary_statistics(
        windows, figsize=(9.0, 8.5),
        title=f"Learned boundaries over {len(windows)} ETTh1 validation windows x 7 channels",
    )
    figure.savefig(args.out / "boundary_statistics.png", dpi=90)
    learned, uniform = (run_spike_task(patcher, steps=args.spike_steps)
                        for patcher in ("learned", "uniform"))
    figure = plot_segmentation(spike_boundaries(learned), figsize=(9.0, 5.4),
                               title=spike_title(learned, uniform))
    figure.savefig(args.out / "spike_segmentation.png", dpi=90)
    print(f"spike task MSE: learned {learned.mse:.4f}, uniform {uniform.mse:.4f}")
    for name in ("segmentation.png", "spike_segmentation.png", "boundary_statistics.png"):
        path = args.out / name
        print(f"wrote {path} ({os.path.getsize(path) // 1024} KiB)")


if __name__ == "__main__":
    main()
