"""The README's main job: what ReinPatch gives and costs, measured in front of the user.

:func:`run_demo` trains ``ReinPatchModel`` (learned patcher with the default policy, GRPG), the
same network with uniform patches, and darts' own TSMixer and DLinear on the ETTh1 training
split (standard protocol: scaler fitted on the training rows), then forecasts every
``horizon``-th window of the validation split with them and with darts' ``NaiveSeasonal`` (a
day, 24 h), and scores them by MSE and MAE on the scaled data (darts' metrics).
:func:`learned_vs_uniform` states the finding from those scores.

:func:`run_spike_task` is the other half of the story: a synthetic task on which boundaries
decide the forecast (one spike at a random position; the target is its amplitude), trained
with the package's network, where the learned patcher moves its patch starts onto the spike and
wins against uniform patches. The command line (``reinpatch-forecast demo``,
:mod:`reinpatch_forecast.cli`) prints both tables and draws the figures.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from darts import TimeSeries, concatenate
from darts.metrics import mae, mse
from darts.models import DLinearModel, NaiveSeasonal, TSMixerModel
from darts.models.forecasting.forecasting_model import ForecastingModel
from darts.models.forecasting.torch_forecasting_model import TorchForecastingModel
from torch import Tensor

from .._lightning import quiet_trainer_kwargs
from ..darts import PatchBoundaries, ReinPatchModel
from ..data import load_bundled_etth1, prepare_ltsf
from ..errors import ReinPatchInputError
from ..nn import ReinPatchConfig, ReinPatchNetwork, uniform_starts
from ..options import patcher_learning_rate
from ..patcher_io import load_pretrained_patcher


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
        Wall time of the fit (of the seasonal naive: of its backtest, which refits it at every
        window).
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


def darts_baselines(lookback: int = 96, horizon: int = 24, epochs: int = 4, seed: int = 0,
                    verbose: bool = True) -> dict[str, ForecastingModel]:
    """darts' own TSMixer and DLinear as a user sets them up beside the demo's model: the same
    lookback, horizon, epochs and batch size, reversible instance normalisation (as darts
    recommends for them), every other argument at darts' default."""
    common = dict(input_chunk_length=lookback, output_chunk_length=horizon, n_epochs=epochs,
                  batch_size=32, use_reversible_instance_norm=True, random_state=seed,
                  pl_trainer_kwargs=quiet_trainer_kwargs(progress=verbose))
    return {"darts TSMixer": TSMixerModel(**common), "darts DLinear": DLinearModel(**common)}


def run_demo(lookback: int = 96, horizon: int = 24, epochs: int = 4,
             max_windows: int = 2048, seed: int = 0, verbose: bool = True) -> list[DemoResult]:
    """Train the demo's models on ETTh1 and score them on its validation split.

    Parameters
    ----------
    lookback, horizon
        Input and forecast length of every model (``L`` and ``H``).
    epochs
        Training epochs of each trained model.
    max_windows
        Most recent training windows used per epoch (darts' ``max_samples_per_ts``).
    seed
        Random state of each trained model.
    verbose
        Show Lightning's progress bars while training.

    Returns
    -------
    list of DemoResult
        One per model, in table order: ReinPatch with the learned patcher, the same network
        with uniform patches, darts' TSMixer and DLinear (:func:`darts_baselines`),
        ``NaiveSeasonal`` (K = 24); each with its fitted model.
    """
    train, val = demo_splits(lookback, horizon)
    start = val.time_index[lookback]  # first target step of the validation split

    def evaluate(name: str, model: ForecastingModel, patcher: str | None = None) -> DemoResult:
        began = time.perf_counter()
        trained = isinstance(model, TorchForecastingModel)
        if trained:
            model.fit(train, max_samples_per_ts=max_windows, verbose=verbose)
        fitted = time.perf_counter()
        forecasts = model.historical_forecasts(
            val, start=start, forecast_horizon=horizon, stride=horizon, retrain=not trained,
            last_points_only=False, verbose=False,
        )
        # the seasonal naive "fits" at every window of its backtest
        seconds = (fitted if trained else time.perf_counter()) - began
        predicted = concatenate(forecasts)
        actual = val.slice_intersect(predicted)
        return DemoResult(name, float(mse(actual, predicted)), float(mae(actual, predicted)),
                          seconds, model, patcher)

    results = [evaluate(name, demo_model(patcher, lookback, horizon, epochs, seed, verbose),
                        patcher)
               for name, patcher in (("ReinPatch (learned)", "learned"),
                                     ("uniform patches", "uniform"))]
    results += [evaluate(name, model) for name, model in
                darts_baselines(lookback, horizon, epochs, seed, verbose).items()]
    results.append(evaluate("NaiveSeasonal (K=24)", NaiveSeasonal(K=24)))
    return results


def learned_vs_uniform(results: list[DemoResult]) -> str:
    """One sentence on the learned against the uniform patcher, from the scores of
    :func:`run_demo`: a tie when their MSEs differ by less than 2 % (about the seed spread of
    the benchmarks' ETTh1 cells), with the ratio of their fit times."""
    by_patcher = {r.patcher: r for r in results if r.patcher is not None}
    learned, uniform = by_patcher["learned"], by_patcher["uniform"]
    change = learned.mse / uniform.mse - 1
    if abs(change) < 0.02:
        verdict = "ties with uniform patches"
    elif change < 0:
        verdict = "beats uniform patches"
    else:
        verdict = "loses to uniform patches"
    return (f"Learned vs uniform on this split: the learned patcher {verdict} (MSE "
            f"{learned.mse:.4f} vs {uniform.mse:.4f}, {change:+.1%}) and took "
            f"{learned.seconds / uniform.seconds:.1f}x uniform's fit time.")


def grid_title(boundaries: list[PatchBoundaries], where: str) -> str:
    """A title for the learned patcher's cuts that says what they are: ``"decodes the uniform
    grid"`` when every start of every window and component sits on it, else the share of the
    starts on it and their mean distance from it (``where`` names the data)."""
    starts = np.concatenate([b.starts.reshape(-1, b.n_patches) for b in boundaries])  # (R, N)
    grid = uniform_starts(len(boundaries[0].time_index), starts.shape[1]).numpy()  # (N,)
    shift = np.abs(starts - grid)
    if not shift.any():
        return f"Learned patcher on {where}: decodes the uniform grid"
    return (f"Learned patcher on {where}: {(shift == 0).mean():.0%} of the starts on the "
            f"uniform grid, mean shift {shift.mean():.2f} steps")


# -- the spike task: where boundaries decide the forecast ------------------------------------

#: Lookback, horizon and patches of the spike task (a compression rate of 12).
SPIKE_LOOKBACK, SPIKE_HORIZON, SPIKE_PATCHES = 96, 8, 8
#: The spike task's backbone: a small Transformer learns it, in seconds on a CPU.
SPIKE_BACKBONE = {"d_model": 32, "n_layers": 1}


@dataclass
class SpikeResult:
    """One patcher on the spike task: its test scores and where it cuts.

    Attributes
    ----------
    patcher : str
        ``"learned"``, ``"uniform"`` or ``"pretrained"``.
    mse : float
        Test MSE over 2,000 fresh windows (the target's variance is 4/3).
    near_spike : float
        Share of test windows with a patch start within one step of the spike.
    seconds : float
        Wall time of the training.
    windows : numpy.ndarray
        ``(W, L)``: the first few test windows with a spike of amplitude at least 1.5 (one
        that stands out of the noise), for the figure.
    starts : numpy.ndarray
        ``(W, N)`` int64: the patch starts the trained patcher decodes on them.
    positions : numpy.ndarray
        ``(W,)``: the spike position in each of them.
    """

    patcher: str
    mse: float
    near_spike: float
    seconds: float
    windows: np.ndarray
    starts: np.ndarray
    positions: np.ndarray


def spike_batch(n: int, generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
    """``n`` windows of the spike task: noise (sigma 0.3) with one spike of amplitude
    ``a ~ U(-2, 2)`` at a uniform random position; the target is ``a`` over the horizon.

    Returns
    -------
    x : Tensor
        ``(n, L, 1)`` windows.
    y : Tensor
        ``(n, H, 1)`` targets.
    position : Tensor
        ``(n,)`` int64 spike positions.
    """
    x = 0.3 * torch.randn(n, SPIKE_LOOKBACK, generator=generator)
    position = torch.randint(0, SPIKE_LOOKBACK, (n,), generator=generator)
    amplitude = torch.rand(n, generator=generator) * 4 - 2
    x[torch.arange(n), position] += amplitude
    y = amplitude[:, None].expand(n, SPIKE_HORIZON).clone()
    return x.unsqueeze(-1), y.unsqueeze(-1), position


def spike_network(patcher: str, density_sigma: float = 1.0,
                  backbone: dict | None = None, training: dict | None = None,
                  patcher_init: str | None = None) -> ReinPatchNetwork:
    """The package's network for the spike task: ``patcher`` with the default patcher and GRPG
    settings, but for the density policy's exploration scale ``density_sigma`` and no instance
    normalisation (each window is already centred noise). A spike is one step of a 96-step
    window: the policy finds it faster when it searches wide (measured with the default
    patcher, GRPG and dropout settings, 200 steps, seeds 0-7: test MSE 0.38-0.53 at
    ``density_sigma=1``; uniform patches 0.91-1.00).
    ``backbone`` holds fields of :class:`~reinpatch_forecast.nn.BackboneConfig` (default
    :data:`SPIKE_BACKBONE`) and ``training`` fields of
    :class:`~reinpatch_forecast.nn.TrainingConfig` (default the package's).
    ``patcher="pretrained"`` is the shipped foundation patcher, frozen (zero-shot: only the
    backbone trains); ``patcher="learned", patcher_init="pretrained"`` starts GRPG from its
    weights and policy settings (its own exploration scale: ``density_sigma`` is unused), as
    the model option ``patcher_init`` does."""
    if patcher_init not in (None, "pretrained") or (patcher_init and patcher != "learned"):
        raise ReinPatchInputError(
            f"patcher_init={patcher_init!r} with patcher={patcher!r}: the spike task starts "
            "only the learned patcher from the shipped one (patcher_init='pretrained').")
    given = None
    if patcher == "pretrained" or patcher_init:
        # loaded on a fork of the global generator (building it draws initial weights), so
        # the backbone's weights and the training windows are those of `patcher="uniform"`
        with torch.random.fork_rng(devices=[]):
            given = load_pretrained_patcher()
        if patcher == "pretrained":
            given.freeze()
    return ReinPatchNetwork(ReinPatchConfig(
        input_length=SPIKE_LOOKBACK, output_length=SPIKE_HORIZON,
        compression_rate=SPIKE_LOOKBACK / SPIKE_PATCHES, revin=False,
        patcher=dict(name="learned" if given is not None else patcher,
                     density_sigma=density_sigma),
        backbone=dict(SPIKE_BACKBONE if backbone is None else backbone),
        training=dict(training or {}),
    ), patcher=given)


def run_spike_task(patcher: str, steps: int = 200, batch_size: int = 64, seed: int = 0,
                   density_sigma: float = 1.0, backbone: dict | None = None,
                   n_test: int = 2000, n_shown: int = 3, training: dict | None = None,
                   patcher_lr: float | None = None,
                   patcher_init: str | None = None) -> SpikeResult:
    """Train :func:`spike_network` by GRPG on fresh spike windows and score it on new ones.

    Every step minimises :attr:`TrainingLosses.loss <reinpatch_forecast.nn.TrainingLosses>`,
    the loss the darts model's training step returns; the windows are drawn afresh at every
    step (no series, no data loader), which is why the loop is written here.

    Parameters
    ----------
    patcher
        ``"learned"``, ``"uniform"`` or ``"pretrained"`` (:func:`spike_network`).
    steps, batch_size
        Adam steps (learning rate 1e-3 for the backbone) and windows per step.
    seed
        Seed of the weights and of the training windows (the test windows are the same for
        every seed).
    density_sigma, backbone
        The density policy's exploration scale (:class:`~reinpatch_forecast.nn.PatcherConfig`)
        and backbone sizes (:func:`spike_network`).
    training
        GRPG settings (:func:`spike_network`).
    n_test, n_shown
        Test windows scored, and how many of them the result keeps for a figure.
    patcher_lr
        The patcher's learning rate; ``None``: ``PATCHER_LR_FACTOR`` times the backbone's, as
        the darts model sets it.
    patcher_init
        ``"pretrained"``: the learned patcher starts from the shipped one (:func:`spike_network`).
    """
    torch.manual_seed(seed)
    network = spike_network(patcher, density_sigma, backbone, training, patcher_init)
    optimiser = torch.optim.Adam([
        {"params": network.backbone_parameters(), "lr": 1e-3},
        {"params": network.patcher_parameters(), "lr": patcher_learning_rate(patcher_lr, 1e-3)},
    ])
    generator = torch.Generator().manual_seed(seed)
    began = time.perf_counter()
    network.train()
    for _ in range(steps):
        x, y, _ = spike_batch(batch_size, generator)
        losses = network.training_losses(x, y)
        optimiser.zero_grad()
        losses.loss.backward()
        optimiser.step()
    seconds = time.perf_counter() - began
    network.eval()
    x, y, position = spike_batch(n_test, torch.Generator().manual_seed(1234))
    with torch.no_grad():
        mse = float(((network(x)[..., 0] - y) ** 2).mean())
        starts = network.boundaries(x)[:, 0]  # (n_test, N)
    near = (starts - position[:, None]).abs().min(dim=-1).values <= 1
    # the first test windows whose spike stands out of the noise, for the figure
    shown = torch.nonzero(y[:, 0, 0].abs() >= 1.5)[:n_shown, 0]
    return SpikeResult(patcher, mse, float(near.float().mean()), seconds,
                       x[shown, :, 0].numpy(), starts[shown].numpy(), position[shown].numpy())


def spike_boundaries(result: SpikeResult) -> PatchBoundaries:
    """The kept test windows of a spike-task result and their patch starts, one component per
    window (named by its spike's position), for
    :func:`~reinpatch_forecast.plotting.plot_segmentation`."""
    return PatchBoundaries(
        time_index=pd.RangeIndex(result.windows.shape[1]), values=result.windows.T.copy(),
        starts=result.starts, components=[f"spike at t = {p}" for p in result.positions])


def spike_finding(learned: SpikeResult, uniform: SpikeResult) -> str:
    """One sentence on the spike task from the two results of :func:`run_spike_task`."""
    verdict = "beats" if learned.mse < uniform.mse else "does not beat"
    return (f"Spike task: the learned patcher {verdict} uniform patches (MSE {learned.mse:.3f} "
            f"vs {uniform.mse:.3f}, {learned.mse / uniform.mse:.2f}x) and puts a patch start "
            f"next to the spike in {learned.near_spike:.0%} of the windows (uniform: "
            f"{uniform.near_spike:.0%}).")


def spike_title(learned: SpikeResult, uniform: SpikeResult) -> str:
    """The title of the spike task's segmentation figure, from the two results."""
    return (f"Learned patcher on the spike task: a patch starts next to the spike in "
            f"{learned.near_spike:.0%} of test windows (uniform grid: {uniform.near_spike:.0%})")
