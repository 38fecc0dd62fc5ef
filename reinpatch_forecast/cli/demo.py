"""The README's main job: ReinPatch on ETTh1 (shipped in the package), against baselines.

:func:`run_demo` trains ``ReinPatchModel`` (learned patcher with the default policy, GRPG) and
the same network with uniform patches on the ETTh1 training split (standard protocol: scaler
fitted on the training rows), then forecasts every ``horizon``-th window of the validation split
with both and with darts' ``NaiveSeasonal`` (a day, 24 h), and scores them by MSE and MAE on the
scaled data (darts' metrics). It returns the scores with the fitted models; the command line
(``reinpatch-forecast demo``, :mod:`reinpatch_forecast.cli`) prints the table and draws the
learned model's figures.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from darts import TimeSeries, concatenate
from darts.metrics import mae, mse
from darts.models import NaiveSeasonal
from darts.models.forecasting.forecasting_model import ForecastingModel

from .._lightning import quiet_trainer_kwargs
from ..darts import ReinPatchModel
from ..data import load_bundled_etth1, prepare_ltsf


@dataclass
class DemoResult:
    """One model of the demo: its validation scores and the fitted model itself.

    Attributes
    ----------
    name : str
        The model's row in the demo's table (``"ReinPatch (learned)"``, ...).
    mse, mae : float
        Mean squared and mean absolute error over the forecast validation windows (scaled
        data).
    seconds : float
        Wall time of the fit and the forecasts.
    model : darts.models.forecasting.forecasting_model.ForecastingModel
        The model: a fitted ``ReinPatchModel``, returned so that a caller draws figures or
        forecasts further without training it again; or the ``NaiveSeasonal`` baseline as
        configured (its backtest refits a copy at every window).
    patcher : str or None
        The ``ReinPatchModel``'s patcher (``"learned"`` or ``"uniform"``); ``None`` for the
        baseline.
    """

    name: str
    mse: float
    mae: float
    seconds: float
    model: ForecastingModel
    patcher: str | None = None


def demo_splits(lookback: int = 96, horizon: int = 24) -> tuple[TimeSeries, TimeSeries]:
    """The shipped ETTh1's training and validation splits, scaled on the training rows.

    Returns
    -------
    train, val : darts.TimeSeries
        The standard LTSF split (:func:`~reinpatch_forecast.data.prepare_ltsf`); ``val``
        starts ``lookback`` rows before its first target step.
    """
    splits = prepare_ltsf(load_bundled_etth1(), "ETTh", lookback, horizon)

    def series(part: str) -> TimeSeries:
        return TimeSeries.from_times_and_values(splits.dates[part], getattr(splits, part),
                                                columns=list(splits.columns), freq="h")

    return series("train"), series("val")


def demo_model(patcher: str = "learned", lookback: int = 96, horizon: int = 24, epochs: int = 4,
               seed: int = 0, verbose: bool = True) -> ReinPatchModel:
    """The demo's (unfitted) model: ``patcher`` with every option at its default but a smaller
    Transformer (``d_model=32``, so that the demo trains in about a minute on a CPU),
    batch 32. The documentation's figures train this same model; ``verbose`` shows Lightning's
    progress bar."""
    return ReinPatchModel(
        input_chunk_length=lookback, output_chunk_length=horizon, patcher=patcher, d_model=32,
        batch_size=32, n_epochs=epochs, random_state=seed,
        pl_trainer_kwargs=quiet_trainer_kwargs(progress=verbose),
    )


def run_demo(lookback: int = 96, horizon: int = 24, epochs: int = 4,
             max_windows: int = 2048, seed: int = 0, verbose: bool = True) -> list[DemoResult]:
    """Train the demo's models on ETTh1 and score them on its validation split.

    Parameters
    ----------
    lookback, horizon
        Input and forecast length of every model (``L`` and ``H``).
    epochs
        Training epochs of each ``ReinPatchModel``.
    max_windows
        Most recent training windows used per epoch (darts' ``max_samples_per_ts``).
    seed
        Random state of each ``ReinPatchModel``.
    verbose
        Show Lightning's progress bars while training.

    Returns
    -------
    list of DemoResult
        One per model, in table order: ReinPatch with the learned patcher, the same network
        with uniform patches, ``NaiveSeasonal`` (K = 24); each with its fitted model.
    """
    train, val = demo_splits(lookback, horizon)
    start = val.time_index[lookback]  # first target step of the validation split

    def evaluate(name: str, forecasts: list[TimeSeries], seconds: float,
                 model: ForecastingModel, patcher: str | None = None) -> DemoResult:
        predicted = concatenate(forecasts)
        actual = val.slice_intersect(predicted)
        return DemoResult(name, float(mse(actual, predicted)), float(mae(actual, predicted)),
                          seconds, model, patcher)

    results = []
    for name, patcher in (("ReinPatch (learned)", "learned"), ("uniform patches", "uniform")):
        began = time.perf_counter()
        model = demo_model(patcher, lookback, horizon, epochs, seed, verbose)
        model.fit(train, max_samples_per_ts=max_windows, verbose=verbose)
        forecasts = model.historical_forecasts(
            val, start=start, forecast_horizon=horizon, stride=horizon, retrain=False,
            last_points_only=False, verbose=False,
        )
        results.append(evaluate(name, forecasts, time.perf_counter() - began, model, patcher))
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
    results.append(evaluate("NaiveSeasonal (K=24)", forecasts, time.perf_counter() - began,
                            naive))
    return results
