"""Colours and figure helpers shared by the plots (x positions, figure grid, axis labels)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..errors import ReinPatchInputError

#: Alternating fill colours of consecutive patches.
DEFAULT_SHADES = ("#4c72b0", "#dd8452")
_SHADE_ALPHA = 0.18


def _edges(index: pd.Index) -> np.ndarray:
    """``L + 1`` x positions between the samples of a window: patch ``[s, e)`` covers
    ``edges[s] .. edges[e]``."""
    if isinstance(index, pd.DatetimeIndex):
        t = index
        mid = t[:-1] + (t[1:] - t[:-1]) / 2
        first = t[0] - (t[1] - t[0]) / 2
        last = t[-1] + (t[-1] - t[-2]) / 2
        return np.concatenate([[first.to_datetime64()], mid.to_numpy(), [last.to_datetime64()]])
    try:
        t = index.to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ReinPatchInputError(
            f"The window's index must be datetimes or numbers, got {index.dtype}."
        ) from error
    mid = (t[:-1] + t[1:]) / 2
    return np.concatenate([[t[0] - (t[1] - t[0]) / 2], mid, [t[-1] + (t[-1] - t[-2]) / 2]])


def _x_values(index: pd.Index) -> np.ndarray:
    """x positions of the samples themselves: datetimes as ``datetime64``, else floats."""
    if isinstance(index, pd.DatetimeIndex):
        return index.to_numpy()
    return index.to_numpy(dtype=np.float64)


def _new_figure(n_rows: int, figsize: tuple[float, float] | None, height: float,
                sharex: bool = True) -> tuple[Figure, list[Axes]]:
    """A figure of ``n_rows`` stacked axes, ``height`` inches each unless ``figsize`` is given."""
    figure = Figure(figsize=figsize or (10.0, 0.8 + height * n_rows), layout="constrained")
    axes = figure.subplots(n_rows, 1, sharex=sharex, squeeze=False)[:, 0]
    return figure, list(axes)


def _label_time_axis(ax: Axes, index: pd.Index) -> None:
    """Name the x axis after the kind of index: dates are "time", anything else "position"."""
    ax.set_xlabel("time" if isinstance(index, pd.DatetimeIndex) else "position")
