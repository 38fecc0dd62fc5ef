"""The README's main job: ReinPatch on ETTh1 (shipped in the package), against baselines.

``python -m reinpatch_forecast.demo`` trains ``ReinPatchModel`` (learned patcher with the
default policy, GRPG) and the same network with uniform patches on the ETTh1 training
split (standard protocol: scaler fitted on the training rows), then forecasts every
``horizon``-th window of the validation split with both and with darts' ``NaiveSeasonal`` (a
day, 24 h), and prints the MSE and MAE on the scaled data, computed by darts' metrics.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
from darts import TimeSeries, concatenate
from darts.metrics import mae, mse
from darts.models import NaiveSeasonal

from .darts import ReinPatchModel
from .datasets import load_bundled_etth1, prepare_ltsf


@dataclass
class DemoResult:
    model: str
    mse: float
    mae: float
    seconds: float


def _series(values: np.ndarray, dates, columns) -> TimeSeries:
    return TimeSeries.from_times_and_values(dates, values, columns=list(columns), freq="h")


def demo_model(patcher: str = "learned", lookback: int = 96, horizon: int = 24, epochs: int = 4,
               seed: int = 0, verbose: bool = True) -> ReinPatchModel:
    """The demo's (unfitted) model: ``patcher`` with the package's default policy, R = 8,
    ``group_size=4``, ``kl_coef=0.1``, ``d_model=32``, 2 layers, batch 32. The documentation's
    figures (``docs/_scripts/make_figures.py``) train this same model."""
    trainer = {"accelerator": "cpu", "enable_progress_bar": verbose, "logger": False,
               "enable_model_summary": False}
    return ReinPatchModel(
        input_chunk_length=lookback, output_chunk_length=horizon, compression_rate=8,
        patcher=patcher, group_size=4, kl_coef=0.1, d_model=32, n_layers=2, dropout=0.1,
        batch_size=32, n_epochs=epochs, random_state=seed, pl_trainer_kwargs=trainer,
    )


def run_demo(lookback: int = 96, horizon: int = 24, epochs: int = 4,
             max_windows: int = 2048, seed: int = 0, verbose: bool = True) -> list[DemoResult]:
    """Train and evaluate; returns one :class:`DemoResult` per model."""
    splits = prepare_ltsf(load_bundled_etth1(), "ETTh", lookback, horizon)
    train = _series(splits.train, splits.dates["train"], splits.columns)
    val = _series(splits.val, splits.dates["val"], splits.columns)
    start = val.time_index[lookback]  # first target step of the validation split

    def evaluate(name: str, forecasts: list[TimeSeries], seconds: float) -> DemoResult:
        predicted = concatenate(forecasts)
        actual = val.slice_intersect(predicted)
        return DemoResult(name, float(mse(actual, predicted)), float(mae(actual, predicted)),
                          seconds)

    results = []
    for name, patcher in (("ReinPatch (learned)", "learned"), ("uniform patches", "uniform")):
        began = time.perf_counter()
        model = demo_model(patcher, lookback, horizon, epochs, seed, verbose)
        model.fit(train, max_samples_per_ts=max_windows, verbose=verbose)
        forecasts = model.historical_forecasts(
            val, start=start, forecast_horizon=horizon, stride=horizon, retrain=False,
            last_points_only=False, verbose=False,
        )
        results.append(evaluate(name, forecasts, time.perf_counter() - began))
        if patcher == "learned":
            boundaries = model.patch_boundaries(val)
            print(f"\nLearned patch starts in the last validation window (OT): "
                  f"{boundaries.starts[-1].tolist()}")

    began = time.perf_counter()
    naive = NaiveSeasonal(K=24)
    forecasts = naive.historical_forecasts(
        val, start=start, forecast_horizon=horizon, stride=horizon, retrain=True,
        last_points_only=False, verbose=False,
    )
    results.append(evaluate("NaiveSeasonal (K=24)", forecasts, time.perf_counter() - began))
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lookback", type=int, default=96)
    parser.add_argument("--horizon", type=int, default=24)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--max-windows", type=int, default=2048,
                        help="most recent training windows used per epoch")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    results = run_demo(args.lookback, args.horizon, args.epochs, args.max_windows, args.seed)
    print(f"\nETTh1, lookback {args.lookback}, horizon {args.horizon}: validation split, "
          "every horizon-th window, scaled data")
    print(f"{'model':<22}{'MSE':>8}{'MAE':>8}{'time (s)':>10}")
    for r in results:
        print(f"{r.model:<22}{r.mse:>8.4f}{r.mae:>8.4f}{r.seconds:>10.1f}")


if __name__ == "__main__":
    main()
