"""reinpatch_forecast.plotting: figures with the right spans, bands and bars; clear errors."""

from __future__ import annotations

import doctest
import importlib
import io
import pkgutil

import numpy as np
import pandas as pd
import pytest
import torch
from darts import TimeSeries
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from reinpatch_forecast import plotting
from reinpatch_forecast.darts import PatchBoundaries
from reinpatch_forecast.nn import VolatilityPatcher
from reinpatch_forecast.plotting import (
    plot_boundary_statistics,
    plot_forecast,
    plot_segmentation,
)


def _boundaries(length: int = 24, starts=((0, 4, 9, 16), (0, 2, 12, 20))) -> PatchBoundaries:
    starts = np.asarray(starts, dtype=np.int64)  # (C, N)
    t = np.arange(length)[:, None]
    values = np.sin(t / 3.0 + np.arange(starts.shape[0])[None, :])  # (L, C)
    return PatchBoundaries(
        time_index=pd.date_range("2024-01-01", periods=length, freq="h"),
        values=values,
        starts=starts,
        components=[f"c{i}" for i in range(starts.shape[0])],
    )


def _png_bytes(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def test_docstring_examples_run():
    # plotting is a package: doctest.testmod only collects what a module defines itself, so run
    # it on every submodule (each public function's examples live with its definition).
    attempted = failed = 0
    for info in pkgutil.iter_modules(plotting.__path__):
        module = importlib.import_module(f"{plotting.__name__}.{info.name}")
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        attempted, failed = attempted + result.attempted, failed + result.failed
    assert attempted >= 3 and failed == 0


def test_package_exports_the_public_names():
    assert sorted(plotting.__all__) == [
        "plot_boundary_statistics", "plot_forecast", "plot_segmentation",
    ]
    for name in plotting.__all__:
        assert callable(getattr(plotting, name)), name
    assert plotting.DEFAULT_SHADES == ("#4c72b0", "#dd8452")


# -- plot_segmentation -----------------------------------------------------------------------


def test_segmentation_of_patch_boundaries_has_one_span_per_patch():
    boundaries = _boundaries()
    figure = plot_segmentation(boundaries)
    assert isinstance(figure, Figure)
    assert figure.canvas.manager is None  # never handed to pyplot
    assert len(figure.axes) == 2
    for ax in figure.axes:
        assert len(ax.patches) == 4  # one shaded span per patch
        assert len(ax.collections) == 1  # the patch means
        dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
        assert len(dashed) == 3  # a marker at every start after position 0
    assert _png_bytes(figure).startswith(b"\x89PNG")


def test_segmentation_spans_alternate_and_cover_the_window():
    figure = plot_segmentation(np.arange(10.0), [0, 3, 7], show_means=False)
    ax = figure.axes[0]
    assert len(ax.collections) == 0
    colours = [tuple(p.get_facecolor()) for p in ax.patches]
    assert colours[0] == colours[2] != colours[1]
    xs = [(p.get_x(), p.get_x() + p.get_width()) for p in ax.patches]
    assert xs == [(-0.5, 2.5), (2.5, 6.5), (6.5, 9.5)]


def test_segmentation_of_a_series_with_starts_and_component_selection():
    frame = pd.DataFrame(
        {"a": np.arange(30.0), "b": np.cos(np.arange(30.0)), "c": np.ones(30)},
        index=pd.date_range("2024-01-01", periods=30, freq="D"),
    )
    series = TimeSeries.from_dataframe(frame)
    figure = plot_segmentation(series, [0, 5, 10, 20, 25], components=["c", 0])
    assert [ax.get_title(loc="left").split(":")[0] for ax in figure.axes] == ["c", "a"]
    assert [len(ax.patches) for ax in figure.axes] == [5, 5]


def test_segmentation_with_boundaries_of_a_longer_series_uses_its_last_window():
    boundaries = _boundaries()
    longer = np.vstack([np.zeros((10, 2)), boundaries.values])
    figure = plot_segmentation(longer, boundaries)
    assert [len(ax.patches) for ax in figure.axes] == [4, 4]


def test_segmentation_draws_coarse_starts_as_thick_lines():
    boundaries = _boundaries()
    figure = plot_segmentation(boundaries, coarse_starts=[[0, 9], [0, 12]])
    for ax in figure.axes:
        thick = [line for line in ax.lines if line.get_linewidth() > 2]
        assert len(thick) == 1
        assert len(ax.patches) == 4


@pytest.mark.parametrize(
    "starts, message",
    [
        ([], "empty"),
        ([1, 5, 9], "begin at 0"),
        ([0, 9, 5], "strictly increasing"),
        ([0, 5, 5], "strictly increasing"),
        ([0, 5, 24], r"\[0, 24\)"),
        ([0, 2.5], "integer"),
        ([[0, 5], [0, 6], [0, 7]], "3 rows"),
        (np.zeros((1, 2, 3), dtype=int), "shape"),
    ],
)
def test_segmentation_rejects_bad_starts(starts, message):
    with pytest.raises(ValueError, match=message):
        plot_segmentation(np.zeros((24, 2)), starts)


def test_segmentation_rejects_bad_windows_and_arguments():
    with pytest.raises(ValueError, match="empty"):
        plot_segmentation(np.zeros(0), [0])
    with pytest.raises(ValueError, match="at least 2"):
        plot_segmentation(np.zeros(1), [0])
    with pytest.raises(ValueError, match="Unknown component"):
        plot_segmentation(_boundaries(), components=["nope"])
    with pytest.raises(ValueError, match="subset"):
        plot_segmentation(_boundaries(), coarse_starts=[[0, 5], [0, 12]])
    with pytest.raises(TypeError, match="No patch starts"):
        plot_segmentation(np.zeros(24))
    with pytest.raises(TypeError, match="either"):
        plot_segmentation(_boundaries(), [0, 5])
    with pytest.raises(ValueError, match="fewer than"):
        plot_segmentation(np.zeros((5, 2)), _boundaries())


# -- plot_boundary_statistics ---------------------------------------------------------------


def test_boundary_statistics_from_a_list_of_patch_boundaries():
    figure = plot_boundary_statistics([_boundaries(), _boundaries()], n_bins=4)
    ax_vol, ax_pos, ax_len, _ = figure.axes
    assert 1 <= len(ax_vol.patches) <= 4  # one bar per (non-empty) volatility bin
    assert len(ax_pos.patches) == 1  # one filled step patch over the positions
    # lengths 4, 5, 7, 8 and 2, 10, 8, 4: one histogram bar per length 1..10
    assert len(ax_len.patches) == 10
    counts = [p.get_height() for p in ax_len.patches]
    assert sum(counts) == 16


def test_boundary_statistics_see_a_volatility_patcher_seek_large_steps():
    rng = np.random.default_rng(0)
    values = np.cumsum(rng.standard_normal((40, 96)), axis=1)  # (R, L)
    patching = VolatilityPatcher().decode(torch.as_tensor(values, dtype=torch.float32), 12)
    starts = patching.starts[:, 0].numpy()  # (R, N)
    figure = plot_boundary_statistics(starts, values, n_bins=5)
    rates = [p.get_height() for p in figure.axes[0].patches]
    assert len(rates) == 5
    assert rates[-1] > 3 * rates[0]
    assert _png_bytes(figure).startswith(b"\x89PNG")


def test_boundary_statistics_of_one_row():
    figure = plot_boundary_statistics([0, 6, 12], np.sin(np.arange(24.0)))
    assert len(figure.axes) == 4


def test_grid_shift_panel_counts_how_far_starts_moved():
    """Row 0 is the uniform grid of 4 patches of 6 steps; row 1 moves two starts by +1, -2."""
    starts = np.array([[0, 6, 12, 18], [0, 7, 12, 16]])
    figure = plot_boundary_statistics(starts, np.random.default_rng(0).normal(size=(2, 24)))
    panel = figure.axes[3]
    heights = {round(p.get_x() + p.get_width() / 2): p.get_height() for p in panel.patches}
    assert heights[0] == 4 and heights[1] == 1 and heights[-2] == 1
    assert "67% on the grid" in panel.get_title(loc="left")  # 4 of the 6 interior starts


def test_boundary_statistics_reject_bad_input():
    with pytest.raises(ValueError, match="2 row"):
        plot_boundary_statistics(np.array([[0, 5], [0, 7]]), np.zeros((3, 24)))
    with pytest.raises(ValueError, match="empty"):
        plot_boundary_statistics([])
    with pytest.raises(ValueError, match="same length"):
        plot_boundary_statistics([_boundaries(), _boundaries(length=30)])
    with pytest.raises(TypeError, match="values"):
        plot_boundary_statistics(np.array([0, 5]))
    with pytest.raises(ValueError, match="begin at 0"):
        plot_boundary_statistics(np.array([2, 5]), np.zeros(24))
    with pytest.raises(ValueError, match="n_bins"):
        plot_boundary_statistics(_boundaries(), n_bins=0)


# -- plot_forecast ---------------------------------------------------------------------------


def _history(length: int = 48, width: int = 2) -> TimeSeries:
    index = pd.date_range("2024-01-01", periods=length, freq="h")
    values = np.sin(np.arange(length)[:, None] / 4.0 + np.arange(width)[None, :])
    return TimeSeries.from_times_and_values(index, values.astype(np.float32))


def _future(history: TimeSeries, n: int = 6, samples: int = 1) -> TimeSeries:
    index = pd.date_range(history.end_time() + history.freq, periods=n, freq=history.freq)
    values = np.random.default_rng(0).normal(size=(n, history.width, samples))
    return TimeSeries.from_times_and_values(index, values, columns=list(history.components))


def test_forecast_band_only_for_stochastic_forecasts():
    history = _history()
    deterministic = plot_forecast(history, _future(history))
    assert [len(ax.collections) for ax in deterministic.axes] == [0, 0]
    stochastic = plot_forecast(history, _future(history, samples=50), actual=_future(history))
    assert len(stochastic.axes) == 2
    for ax in stochastic.axes:
        assert len(ax.collections) == 1
        assert isinstance(ax.collections[0], PolyCollection)
    no_band = plot_forecast(history, _future(history, samples=50), quantiles=None)
    assert [len(ax.collections) for ax in no_band.axes] == [0, 0]
    assert _png_bytes(stochastic).startswith(b"\x89PNG")


def test_forecast_band_follows_the_quantiles():
    samples = np.linspace(0.0, 1.0, 101)[None, None, :].repeat(3, axis=0)  # (H, C, S)
    figure = plot_forecast(np.zeros(10), samples, quantiles=(0.25, 0.75))
    band = figure.axes[0].collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(0.25) and band.max() == pytest.approx(0.75)


def test_forecast_of_arrays_continues_the_history_and_crops_it():
    history = _history(width=1)
    figure = plot_forecast(history, np.ones(6), max_history=12, components=[0])
    history_line, forecast_line = figure.axes[0].lines[:2]
    assert len(history_line.get_xdata()) == 12
    assert len(forecast_line.get_xdata()) == 6


def test_forecast_rejects_bad_input():
    history = _history()
    with pytest.raises(ValueError, match="component"):
        plot_forecast(history, _future(_history(width=3)))
    with pytest.raises(ValueError, match="quantiles"):
        plot_forecast(history, _future(history), quantiles=(0.9, 0.1))
    with pytest.raises(ValueError, match="quantiles"):
        plot_forecast(history, _future(history), quantiles=(0.0, 0.5))
    with pytest.raises(ValueError, match="empty"):
        plot_forecast(np.zeros((0, 2)), _future(history))
    with pytest.raises(ValueError, match="empty"):
        plot_forecast(history, np.zeros((0, 2)))
    with pytest.raises(ValueError, match="max_history"):
        plot_forecast(history, _future(history), max_history=0)
    with pytest.raises(ValueError, match="actual has 1"):
        plot_forecast(history, _future(history), actual=np.zeros(6))
