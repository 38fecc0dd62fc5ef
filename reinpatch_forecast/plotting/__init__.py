"""Plots of patch segmentations, boundary statistics and forecasts.

Every function builds a :class:`matplotlib.figure.Figure` with the object API (no ``pyplot``
state, no ``plt.show``), so it works with any backend, including Agg on a headless machine, and
returns the figure: save it with ``fig.savefig(path)`` or display it in a notebook.

Inputs may be darts ``TimeSeries``, pandas objects or numpy arrays; a
:class:`~reinpatch_forecast.darts.PatchBoundaries` (from ``ReinPatchModel.patch_boundaries``)
carries a window and its patch starts together. darts is never imported by this module: a
``TimeSeries`` is recognised only if darts is already loaded.

Shape legend
------------
L : window length (lookback)
C : components (channels); each has its own patches
N : patches per component
R : rows (one window of one component) in boundary statistics
T : history length
H : forecast length
S : samples of a stochastic forecast
"""

from __future__ import annotations

# The functions live in private modules, one per figure, and are re-exported here so that
# ``reinpatch_forecast.plotting`` stays the one import path (and the one the API docs show):
# ``_inputs`` normalises and validates inputs, ``_layout`` holds colours and figure helpers,
# ``_segmentation``, ``_statistics`` and ``_forecast`` each build one figure.

from ._forecast import plot_forecast
from ._layout import DEFAULT_SHADES
from ._segmentation import plot_segmentation
from ._statistics import plot_boundary_statistics

__all__ = ["plot_segmentation", "plot_boundary_statistics", "plot_forecast"]
