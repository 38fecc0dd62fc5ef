"""The benchmarks' evaluation protocol: scores over every stride-1 window of a split, the
Repeat baseline, and forecasts of a fitted darts model for a batch of windows.

The splits and the train-only scaler are the package's (``reinpatch_forecast.data``:
``prepare_ltsf``, ``sliding_windows``); what is scored on them, and how, is the benchmarks'
business and lives here; ``run.py`` imports it as ``_protocol``.

Shape legend
------------
W : stride-1 windows of a split, ``T - L - H + 1``
b : windows in one batch
L : look-back length
H : forecast horizon
C : channels
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from reinpatch_forecast.data import sliding_windows

if TYPE_CHECKING:  # darts is heavy; only the darts forecaster needs it, at call time
    from darts.models.forecasting.torch_forecasting_model import TorchForecastingModel

#: A batch forecaster: input windows ``(b, L, C)`` -> forecasts ``(b, H, C)``.
PredictFn = Callable[[np.ndarray], np.ndarray]


def evaluate_windows(predict_fn: PredictFn, split_array: np.ndarray, lookback: int, horizon: int,
                     batch_size: int = 512,
                     drop_last_batch_size: int | None = None) -> dict[str, float | int]:
    """MSE and MAE of a forecaster over the stride-1 windows of a split.

    Both metrics are one flat mean over windows × horizon × channels, accumulated in float64.

    Parameters
    ----------
    predict_fn
        Maps ``x`` of shape ``(b, L, C)`` (a contiguous float array) to ``y_hat`` of shape
        ``(b, H, C)`` (anything ``numpy.asarray`` accepts, such as a CPU tensor without grad).
    split_array
        Shape ``(T, C)``: a scaled split including its look-back rows (``LTSFSplits.test``).
    lookback, horizon
        ``L`` and ``H``.
    batch_size
        Windows per ``predict_fn`` call.
    drop_last_batch_size
        ``None`` (default) scores all windows. An integer ``B`` reproduces the old
        ``drop_last=True`` test loader: the last ``W mod B`` windows are left out
        (``B = 32`` matches the published LTSF-Linear tables).

    Returns ``{"mse", "mae", "n_windows"`` (windows scored), ``"n_dropped"`` (windows left out
    by ``drop_last_batch_size``), ``"mae_per_channel"`` (the MAE of each of the ``C`` channels
    over windows × horizon; their mean is ``mae``)``}``; ``ValueError`` on bad sizes, a
    prediction of the wrong shape, or a non-finite prediction.
    """
    batch_size = int(batch_size)
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
    x_all, y_all = sliding_windows(split_array, lookback, horizon)
    n_total, _, n_channels = x_all.shape
    n_used = n_total
    if drop_last_batch_size is not None:
        if int(drop_last_batch_size) < 1:
            raise ValueError(f"drop_last_batch_size must be >= 1, got {drop_last_batch_size}.")
        n_used = n_total - n_total % int(drop_last_batch_size)
        if n_used == 0:
            raise ValueError(f"drop_last_batch_size={drop_last_batch_size} leaves none of the "
                             f"{n_total} windows.")

    sq_sum = 0.0
    abs_sum = np.zeros(n_channels)  # (C,): per channel, for scores on each channel's own scale
    for start in range(0, n_used, batch_size):
        stop = min(start + batch_size, n_used)
        x = np.ascontiguousarray(x_all[start:stop])
        y_hat = np.asarray(predict_fn(x), dtype=np.float64)
        expected = (stop - start, horizon, n_channels)
        if y_hat.shape != expected:
            raise ValueError(f"predict_fn returned shape {y_hat.shape} for input {x.shape}; "
                             f"expected {expected} = (b, H, C).")
        err = y_hat - y_all[start:stop]  # float64
        if not np.isfinite(err).all():
            raise ValueError(f"predict_fn returned non-finite values for windows {start}..{stop}.")
        abs_sum += np.abs(err).sum(axis=(0, 1))
        np.square(err, out=err)
        sq_sum += float(err.sum())
    n_values = n_used * horizon * n_channels
    return {"mse": sq_sum / n_values, "mae": float(abs_sum.sum()) / n_values,
            "n_windows": n_used, "n_dropped": n_total - n_used,
            "mae_per_channel": [float(v) for v in abs_sum / (n_used * horizon)]}


def repeat_forecast(x: np.ndarray, horizon: int) -> np.ndarray:
    """The Repeat baseline, ``(b, L, C) -> (b, H, C)``: the last input value of each channel
    repeated ``H`` times (the seasonal naive forecast of period 1)."""
    return seasonal_naive_forecast(x, horizon, 1)


def seasonal_naive_forecast(x: np.ndarray, horizon: int, period: int) -> np.ndarray:
    """The seasonal naive baseline, ``(b, L, C) -> (b, H, C)`` in the dtype of ``x``: the last
    ``period`` input steps of each channel (``K``, the season in steps: 24 for hourly data with
    a daily cycle) repeated over the horizon, so forecast step ``t`` is input step
    ``L - K + t mod K``. ``ValueError`` where ``x`` is not 3-D, ``H < 1``, ``K < 1`` or
    ``K > L``."""
    x = np.asarray(x)
    if x.ndim != 3:
        raise ValueError(f"x must have shape (b, L, C), got shape {x.shape}.")
    horizon, period = int(horizon), int(period)
    if horizon < 1 or period < 1:
        raise ValueError(f"horizon and period must be >= 1, got {horizon} and {period}.")
    if period > x.shape[1]:
        raise ValueError(f"period {period} is longer than the lookback {x.shape[1]}.")
    steps = x.shape[1] - period + np.arange(horizon) % period  # (H,)
    return x[:, steps, :]


#: The untrained baselines :func:`baseline_predict_fn` builds (a run of one trains nothing).
BASELINES = ("repeat", "naive")


def baseline_predict_fn(model: str, horizon: int, params: dict | None = None) -> PredictFn:
    """The :data:`PredictFn` of an untrained baseline: ``"repeat"`` (:func:`repeat_forecast`)
    or ``"naive"`` (:func:`seasonal_naive_forecast` with period ``params["K"]``)."""
    if model == "repeat":
        return lambda x: repeat_forecast(x, horizon)
    if model == "naive":
        period = int((params or {})["K"])
        return lambda x: seasonal_naive_forecast(x, horizon, period)
    raise ValueError(f"not an untrained baseline: {model!r} (use one of {BASELINES})")


def darts_predict_fn(model: TorchForecastingModel, horizon: int | None = None) -> PredictFn:
    """A :data:`PredictFn` that forecasts through a fitted darts model's public ``predict``.

    Each window of a batch becomes its own ``TimeSeries``, and the batch is forecast by one
    ``model.predict(n=H, series=[...])`` call with darts' batch size set to the batch, so that
    the model sees exactly the batches :func:`evaluate_windows` forms (the scores then match a
    direct call of the Lightning module bit for bit). Past covariates are not supported.
    ``model``: a fitted darts torch model (``ReinPatchModel``, ``DLinearModel``, ...);
    ``horizon``: ``H`` (``None``: ``model.output_chunk_length``). The forecasts ``(b, H, C)``
    come back as a numpy array of the model's dtype.
    """
    from darts import TimeSeries

    from reinpatch_forecast._lightning import quiet_lightning

    n = int(horizon or model.output_chunk_length)

    def predict(x: np.ndarray) -> np.ndarray:
        series = [TimeSeries.from_values(window) for window in x]
        # Every predict call builds a Lightning trainer; without this each batch would print
        # its start-up banner into the benchmark log.
        with quiet_lightning():
            forecasts = model.predict(n, series=series, batch_size=len(series), verbose=False)
        return np.stack([forecast.values(copy=False) for forecast in forecasts])  # (b, H, C)

    return predict


# -- decoded patches ---------------------------------------------------------------------------


def patch_statistics(starts: Any, length: int) -> dict[str, float]:
    """Statistics of decoded patchings ``starts`` ``(..., N)`` of windows of ``length`` steps.

    Returns the mean first and last patch length, the share of one-step patches, the mean
    within-window standard deviation of the patch lengths, the mean distance of a start
    from the uniform grid's of as many patches (``reinpatch_forecast.nn.grid.uniform_starts``)
    and the mean number of patches used (fewer than ``N`` only under an at-most budget, whose
    unused slots hold ``length``: they count in none of the other statistics).
    """
    from reinpatch_forecast.nn.grid import uniform_starts

    starts = np.asarray(starts, dtype=np.int64)
    starts = starts.reshape(-1, starts.shape[-1])  # (S, N)
    used = starts < length  # (S, N)
    count = used.sum(axis=1)  # (S,)
    lengths = np.diff(np.concatenate([starts, np.full((len(starts), 1), length)], axis=1))
    last = lengths[np.arange(len(starts)), count - 1]  # (S,): the last used patch
    mean = lengths.sum(axis=1, keepdims=True) / count[:, None]  # (S, 1)
    spread = np.sqrt((((lengths - mean) ** 2) * used).sum(axis=1) / count)  # (S,)
    # Distance from the uniform grid of as many patches as the window uses.
    grids = np.full(starts.shape, length, dtype=np.int64)  # (S, N)
    for n in np.unique(count):
        grids[count == n, :n] = uniform_starts(length, int(n)).numpy()
    return {
        "first_length": float(lengths[:, 0].mean()),
        "last_length": float(last.mean()),
        "one_step_share": float((lengths[used] == 1).mean()),
        "length_std": float(spread.mean()),
        "grid_distance": float(np.abs(starts - grids)[used].mean()),
        "tokens_used": float(count.mean()),
    }


def decoded_patch_statistics(model, array, lookback: int, windows: int = 256) -> dict[str, float]:
    """:func:`patch_statistics` of a fitted ``ReinPatchModel`` on up to ``windows`` evenly
    spaced lookback windows of ``array`` ``(T, C)``, read through ``model.patch_boundaries``."""
    from darts import TimeSeries

    last = array.shape[0] - lookback
    ends = np.unique(np.linspace(0, last, num=min(windows, last + 1)).round().astype(int))
    series = [TimeSeries.from_values(np.ascontiguousarray(array[e:e + lookback],
                                                          dtype=np.float32)) for e in ends]
    starts = np.stack([b.starts for b in model.patch_boundaries(series)])  # (S, C, N)
    return patch_statistics(starts, lookback)
