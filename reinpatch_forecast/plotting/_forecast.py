"""The forecast plot: a history, its forecast and a quantile band of a stochastic forecast."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..errors import ReinPatchInputError
from ._inputs import _is_timeseries, _samples_of, _select, _series_of
from ._layout import _label_time_axis, _new_figure, _x_values


def _continue_index(history_index: pd.Index, n: int) -> pd.Index:
    """The ``n`` steps after a history's index (for a forecast given as a bare array)."""
    if isinstance(history_index, pd.DatetimeIndex):
        freq = history_index.freq or (
            pd.infer_freq(history_index) if len(history_index) >= 3 else None
        )
        if freq is None:
            raise ReinPatchInputError(
                "The forecast is a bare array and the history's dates have no regular "
                "frequency: pass the forecast as a TimeSeries or pandas object with its dates."
            )
        return pd.date_range(history_index[-1], periods=n + 1, freq=freq)[1:]
    step = 1 if len(history_index) < 2 else history_index[-1] - history_index[-2]
    return pd.Index(history_index[-1] + step * np.arange(1, n + 1))


def _after_history(
    obj: Any, name: str, index: pd.Index, values: np.ndarray, history_index: pd.Index,
    names: list[str],
) -> pd.Index:
    """Check that ``obj`` (the forecast or the actual values, ``values`` of shape ``(H, C, ...)``)
    has the history's ``C`` components and return its index: its own when it carries one
    (a ``TimeSeries`` or pandas object), else the ``H`` steps right after the history."""
    if values.shape[1] != len(names):
        raise ReinPatchInputError(
            f"{name} has {values.shape[1]} component(s) but history has {len(names)} ({names})."
        )
    if _is_timeseries(obj) or isinstance(obj, (pd.Series, pd.DataFrame)):
        return index
    return _continue_index(history_index, values.shape[0])


def plot_forecast(
    history: Any,
    forecast: Any,
    quantiles: tuple[float, float] | None = (0.1, 0.9),
    *,
    actual: Any = None,
    components: Sequence[str | int] | str | int | None = None,
    max_history: int | None = None,
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
) -> Figure:
    """Draw a history, its forecast and (for a stochastic forecast) a quantile band.

    Parameters
    ----------
    history
        The observed series: a darts ``TimeSeries``, a pandas ``Series``/``DataFrame`` or an
        array ``(T,)`` / ``(T, C)``.
    forecast
        The forecast: a darts ``TimeSeries`` (deterministic, or stochastic with ``S`` samples),
        a pandas object, or an array ``(H,)``, ``(H, C)`` or ``(H, C, S)`` (a bare array is
        placed right after the history). A stochastic forecast is drawn by its median.
    quantiles
        ``(low, high)`` levels of the shaded band of a stochastic forecast, ``0 < low < high
        < 1``; ``None`` draws no band. Ignored for a deterministic forecast.
    actual
        Optional observed values over the forecast period, drawn dashed.
    components
        Names or indices of the components to draw; default all.
    max_history
        Draw only the last ``max_history`` steps of the history; default all.
    title
        Figure title.
    figsize
        Figure size in inches.

    Returns
    -------
    matplotlib.figure.Figure
        One axes per drawn component; with a stochastic forecast and ``quantiles``, each holds
        one band (a ``PolyCollection``) in ``ax.collections``.

    Raises
    ------
    ValueError
        Empty inputs, forecast / actual with a different number of components than the
        history, invalid ``quantiles``, ``max_history < 1``, an unknown component, or a bare
        forecast array after a history without a regular frequency.

    Examples
    --------
    >>> import numpy as np
    >>> from reinpatch_forecast.plotting import plot_forecast
    >>> samples = np.random.default_rng(0).normal(size=(6, 1, 50))  # (H, C, S)
    >>> fig = plot_forecast(np.arange(24.0), samples, quantiles=(0.1, 0.9))
    >>> len(fig.axes[0].collections)
    1
    """
    if quantiles is not None:
        q = tuple(float(v) for v in quantiles)
        if len(q) != 2 or not 0.0 < q[0] < q[1] < 1.0:
            raise ReinPatchInputError(
                f"quantiles must be (low, high) with 0 < low < high < 1, got {quantiles!r}."
            )
    if max_history is not None and int(max_history) < 1:
        raise ReinPatchInputError(f"max_history must be >= 1, got {max_history}.")
    hist_index, hist_values, names = _series_of(history, "history")
    fc_index, fc_samples, _ = _samples_of(forecast, "forecast")
    fc_index = _after_history(forecast, "forecast", fc_index, fc_samples, hist_index, names)
    actual_parts = None
    if actual is not None:
        act_index, act_values, _ = _series_of(actual, "actual")
        act_index = _after_history(actual, "actual", act_index, act_values, hist_index, names)
        actual_parts = (act_index, act_values)
    if max_history is not None:
        hist_index, hist_values = hist_index[-int(max_history):], hist_values[-int(max_history):]

    chosen = _select(names, components)
    stochastic = fc_samples.shape[2] > 1
    centre = np.median(fc_samples, axis=2) if stochastic else fc_samples[:, :, 0]  # (H, C)
    band = None
    if stochastic and quantiles is not None:
        band = np.quantile(fc_samples, q, axis=2)  # (2, H, C)

    figure, axes = _new_figure(len(chosen), figsize, 2.0)
    for i, (ax, c) in enumerate(zip(axes, chosen)):
        ax.plot(_x_values(hist_index), hist_values[:, c], color="black", lw=1.1, label="history")
        if actual_parts is not None:
            ax.plot(_x_values(actual_parts[0]), actual_parts[1][:, c], color="black", lw=1.1,
                    ls="--", label="actual")
        if band is not None:
            ax.fill_between(_x_values(fc_index), band[0, :, c], band[1, :, c], color="tab:blue",
                            alpha=0.25, lw=0,
                            label=f"{q[0]:.0%}-{q[1]:.0%} band")
        ax.plot(_x_values(fc_index), centre[:, c], color="tab:blue", lw=1.6,
                label="forecast (median)" if stochastic else "forecast")
        ax.axvline(_x_values(fc_index)[0], color="0.6", lw=0.8, ls=":")
        ax.set_title(names[c], fontsize=9, loc="left")
        if i == 0:
            ax.legend(fontsize=8, loc="best")
    _label_time_axis(axes[-1], hist_index)
    if title:
        figure.suptitle(title, fontsize=10)
    return figure
