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

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

__all__ = ["plot_segmentation", "plot_boundary_statistics", "plot_forecast"]

#: Alternating fill colours of consecutive patches.
DEFAULT_SHADES = ("#4c72b0", "#dd8452")
_SHADE_ALPHA = 0.18


# --------------------------------------------------------------------------------------------
# Input normalisation
# --------------------------------------------------------------------------------------------


def _is_timeseries(obj: Any) -> bool:
    """Whether ``obj`` is a darts ``TimeSeries`` (without importing darts)."""
    darts = sys.modules.get("darts")
    return darts is not None and isinstance(obj, getattr(darts, "TimeSeries", ()))


def _is_boundaries(obj: Any) -> bool:
    """Whether ``obj`` looks like a ``PatchBoundaries`` (duck-typed, so no darts import)."""
    return all(hasattr(obj, name) for name in ("time_index", "values", "starts", "components"))


def _samples_of(obj: Any, name: str) -> tuple[pd.Index, np.ndarray, list[str]]:
    """Index, values ``(T, C, S)`` and component names of a series-like input."""
    if _is_timeseries(obj):
        values = np.asarray(obj.all_values(copy=False), dtype=np.float64)  # (T, C, S)
        return pd.Index(obj.time_index), values, [str(c) for c in obj.components]
    if isinstance(obj, pd.Series):
        values = obj.to_numpy(dtype=np.float64)[:, None, None]
        return pd.Index(obj.index), values, [str(obj.name) if obj.name is not None else "0"]
    if isinstance(obj, pd.DataFrame):
        non_numeric = [str(c) for c in obj.columns if not pd.api.types.is_numeric_dtype(obj[c])]
        if non_numeric:
            raise ValueError(f"{name} has non-numeric column(s) {non_numeric}.")
        values = obj.to_numpy(dtype=np.float64)[:, :, None]
        return pd.Index(obj.index), values, [str(c) for c in obj.columns]
    try:
        array = np.asarray(obj, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"{name} must be a darts TimeSeries, a pandas Series/DataFrame or a numeric array; "
            f"got {type(obj).__name__}."
        ) from error
    if array.ndim == 1:
        array = array[:, None, None]
    elif array.ndim == 2:
        array = array[:, :, None]
    elif array.ndim != 3:
        raise ValueError(
            f"{name} must have shape (T,), (T, C) or (T, C, S); got shape {array.shape}."
        )
    return pd.RangeIndex(array.shape[0]), array, [str(i) for i in range(array.shape[1])]


def _series_of(obj: Any, name: str) -> tuple[pd.Index, np.ndarray, list[str]]:
    """Index, values ``(T, C)`` (the sample median if stochastic) and component names."""
    index, samples, names = _samples_of(obj, name)
    if samples.shape[0] == 0 or samples.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {samples.shape[:2]}).")
    values = samples[:, :, 0] if samples.shape[2] == 1 else np.median(samples, axis=2)
    return index, values, names


def _select(names: list[str], components: Sequence[str | int] | None) -> list[int]:
    """Indices of the components to draw (all by default)."""
    if components is None:
        return list(range(len(names)))
    if isinstance(components, (str, int)):
        components = [components]
    chosen = []
    for component in components:
        if isinstance(component, (int, np.integer)) and not isinstance(component, bool):
            if not -len(names) <= component < len(names):
                raise ValueError(
                    f"Component index {component} out of range: there are {len(names)} "
                    f"components ({names})."
                )
            chosen.append(int(component) % len(names))
        elif str(component) in names:
            chosen.append(names.index(str(component)))
        else:
            raise ValueError(f"Unknown component {component!r}; the components are {names}.")
    if not chosen:
        raise ValueError("components is empty: name at least one component to draw.")
    return chosen


def _check_starts(
    starts: Any, n_components: int, length: int, names: list[str], what: str = "starts"
) -> np.ndarray:
    """Validate patch starts and return them as an int64 array ``(C, N)``.

    A 1-D ``(N,)`` array applies to every component.
    """
    array = np.asarray(starts)
    if array.size == 0:
        raise ValueError(
            f"{what} is empty: every window needs at least one patch, starting at position 0."
        )
    if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise ValueError(f"{what} must hold integer positions, got dtype {array.dtype}.")
    if np.issubdtype(array.dtype, np.floating):
        if not np.all(np.isfinite(array)) or not np.all(array == np.round(array)):
            raise ValueError(f"{what} must hold integer positions, got {array.tolist()}.")
    array = array.astype(np.int64)
    if array.ndim == 1:
        array = np.broadcast_to(array, (n_components, array.shape[0]))
    if array.ndim != 2:
        raise ValueError(f"{what} must have shape (N,) or (C, N); got shape {array.shape}.")
    if array.shape[0] != n_components:
        raise ValueError(
            f"{what} has {array.shape[0]} rows but the window has {n_components} component(s) "
            f"({names}): pass one row of starts per component, shape (C, N)."
        )
    for row, name in zip(array, names):
        if row[0] != 0:
            raise ValueError(
                f"{what} of component {name!r} must begin at 0 (position 0 always starts the "
                f"first patch); got {row.tolist()}."
            )
        if np.any(np.diff(row) <= 0):
            raise ValueError(
                f"{what} of component {name!r} must be strictly increasing (sorted, no "
                f"repeats); got {row.tolist()}."
            )
        if row[-1] >= length:
            raise ValueError(
                f"{what} of component {name!r} must lie in [0, {length}) for a window of "
                f"{length} steps; got {row.tolist()}."
            )
    return np.ascontiguousarray(array)


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
        raise ValueError(
            f"The window's index must be datetimes or numbers, got {index.dtype}."
        ) from error
    mid = (t[:-1] + t[1:]) / 2
    return np.concatenate([[t[0] - (t[1] - t[0]) / 2], mid, [t[-1] + (t[-1] - t[-2]) / 2]])


def _x_values(index: pd.Index) -> np.ndarray:
    if isinstance(index, pd.DatetimeIndex):
        return index.to_numpy()
    return index.to_numpy(dtype=np.float64)


def _new_figure(n_rows: int, figsize: tuple[float, float] | None, height: float,
                sharex: bool = True) -> tuple[Figure, list[Axes]]:
    figure = Figure(figsize=figsize or (10.0, 0.8 + height * n_rows), layout="constrained")
    axes = figure.subplots(n_rows, 1, sharex=sharex, squeeze=False)[:, 0]
    return figure, list(axes)


# --------------------------------------------------------------------------------------------
# Segmentation
# --------------------------------------------------------------------------------------------


def plot_segmentation(
    series_or_boundaries: Any,
    boundaries: Any = None,
    *,
    coarse_starts: Any = None,
    components: Sequence[str | int] | str | int | None = None,
    title: str | None = None,
    shades: tuple[str, str] = DEFAULT_SHADES,
    show_means: bool = True,
    figsize: tuple[float, float] | None = None,
) -> Figure:
    """Draw a window cut into patches: one subplot per component.

    Each patch is shaded (two alternating shades), every patch start after position 0 is
    marked by a dashed line, and the mean of each patch (what a token's local-feature part
    averages over) is drawn as a short horizontal segment.

    Parameters
    ----------
    series_or_boundaries
        Either a :class:`~reinpatch_forecast.darts.PatchBoundaries` (window and starts
        together; leave ``boundaries`` as ``None``), or the window itself: a darts
        ``TimeSeries``, a pandas ``Series``/``DataFrame`` or an array of shape ``(L,)`` or
        ``(L, C)``. A stochastic ``TimeSeries`` is drawn by its sample median.
    boundaries
        With a window as first argument: the patch starts, shape ``(N,)`` (the same for every
        component) or ``(C, N)``, each row sorted, starting at 0 and below ``L``; or a
        ``PatchBoundaries``, whose starts then apply to the last ``L`` steps of the window.
    coarse_starts
        Optional second level of boundaries (the ``levels`` hook of a hierarchical patcher),
        ``(N2,)`` or ``(C, N2)``, each row a subset of the same component's starts. Coarse
        boundaries are drawn as thick solid lines. Default: the ``coarse_starts`` of a
        two-level ``PatchBoundaries`` given as the first or second argument.
    components
        Names or indices of the components to draw; default all.
    title
        Figure title; default a summary of the window.
    shades
        The two alternating fill colours of consecutive patches.
    show_means
        Draw each patch's mean value.
    figsize
        Figure size in inches; default 10 wide and about 1.9 per component.

    Returns
    -------
    matplotlib.figure.Figure
        One axes per drawn component, each holding exactly ``N`` shaded spans in
        ``ax.patches`` (and one line collection of patch means in ``ax.collections`` when
        ``show_means``).

    Raises
    ------
    ValueError
        An empty window or a window shorter than 2 steps, starts that are empty, not integer,
        not starting at 0, not strictly increasing, out of range or with the wrong number of
        rows, coarse starts that are not nested in the starts, or an unknown component.
    TypeError
        A ``PatchBoundaries`` passed together with a second one, or no starts at all.

    Examples
    --------
    >>> import numpy as np
    >>> from reinpatch_forecast.plotting import plot_segmentation
    >>> window = np.sin(np.linspace(0, 6, 24))
    >>> fig = plot_segmentation(window, [0, 5, 9, 16])
    >>> len(fig.axes[0].patches)
    4
    """
    if _is_boundaries(series_or_boundaries):
        if boundaries is not None:
            raise TypeError(
                "Pass either a PatchBoundaries alone, or a window and its starts; got a "
                "PatchBoundaries and a second `boundaries` argument."
            )
        source = series_or_boundaries
        index = pd.Index(source.time_index)
        values = np.asarray(source.values, dtype=np.float64)
        if values.ndim == 1:
            values = values[:, None]
        names = [str(c) for c in source.components]
        starts = source.starts
        if values.ndim != 2 or values.shape[1] != len(names) or values.shape[0] != len(index):
            raise ValueError(
                f"The PatchBoundaries is inconsistent: values of shape {values.shape}, "
                f"{len(index)} time stamps and {len(names)} components."
            )
    else:
        if boundaries is None:
            raise TypeError(
                "No patch starts given: pass a PatchBoundaries (ReinPatchModel.patch_boundaries"
                "()), or a window and its starts as `boundaries`."
            )
        index, values, names = _series_of(series_or_boundaries, "The window")
        if _is_boundaries(boundaries):
            length = len(boundaries.time_index)
            if values.shape[0] < length:
                raise ValueError(
                    f"The series has {values.shape[0]} steps, fewer than the {length} steps of "
                    "the PatchBoundaries' window."
                )
            index, values = index[-length:], values[-length:]
            starts = boundaries.starts
        else:
            starts = boundaries
    # A two-level PatchBoundaries carries its coarse starts; an explicit argument wins.
    for source in (series_or_boundaries, boundaries):
        if coarse_starts is None and _is_boundaries(source):
            coarse_starts = getattr(source, "coarse_starts", None)
    length = values.shape[0]
    if length < 2:
        raise ValueError(f"The window has {length} step(s); a segmentation needs at least 2.")
    starts = _check_starts(starts, len(names), length, names)  # (C, N)
    coarse = None
    if coarse_starts is not None:
        coarse = _check_starts(coarse_starts, len(names), length, names, "coarse_starts")
        for row, fine, name in zip(coarse, starts, names):
            if not np.isin(row, fine).all():
                raise ValueError(
                    f"coarse_starts of component {name!r} must be a subset of its starts "
                    f"(levels are nested); {sorted(set(row) - set(fine))} are not starts."
                )

    chosen = _select(names, components)
    edges = _edges(index)  # (L + 1,)
    x = _x_values(index)  # (L,)
    figure, axes = _new_figure(len(chosen), figsize, 1.9)
    for ax, c in zip(axes, chosen):
        row = starts[c]  # (N,)
        ends = np.append(row[1:], length)  # (N,)
        for j, (s, e) in enumerate(zip(row, ends)):
            ax.axvspan(edges[s], edges[e], color=shades[j % 2], alpha=_SHADE_ALPHA, lw=0)
        ax.plot(x, values[:, c], color="black", lw=1.2)
        for s in row[1:]:
            ax.axvline(edges[s], color="0.35", lw=0.8, ls="--")
        if coarse is not None:
            for s in coarse[c][1:]:
                ax.axvline(edges[s], color="black", lw=2.4)
        if show_means:
            means = np.add.reduceat(values[:, c], row) / (ends - row)  # (N,)
            ax.hlines(means, edges[row], edges[ends], colors="tab:red", lw=1.6)
        lengths = ends - row
        label = (f"{names[c]}: {len(row)} patches, lengths {lengths.min()}-{lengths.max()} "
                 f"(mean {lengths.mean():.1f})")
        if coarse is not None:
            label += f"; {len(coarse[c])} coarse patches"
        ax.set_title(label, fontsize=9, loc="left")
        ax.set_xlim(edges[0], edges[-1])
        ax.margins(y=0.1)
    axes[-1].set_xlabel("time" if isinstance(index, pd.DatetimeIndex) else "position")
    figure.suptitle(
        title or f"Patches of a window of {length} steps (dashed: patch starts"
        + ("; thick: coarse starts" if coarse is not None else "")
        + ("; red: patch means)" if show_means else ")"),
        fontsize=10,
    )
    return figure


# --------------------------------------------------------------------------------------------
# Boundary statistics
# --------------------------------------------------------------------------------------------


def _statistics_rows(boundaries: Any, values: Any) -> tuple[np.ndarray, np.ndarray]:
    """Boolean start masks ``(R, L)`` and window values ``(R, L)`` from any accepted input."""
    if _is_boundaries(boundaries):
        boundaries = [boundaries]
    is_list = (
        isinstance(boundaries, Sequence)
        and not isinstance(boundaries, (str, bytes))
        and len(boundaries) > 0
        and all(_is_boundaries(b) for b in boundaries)
    )
    if is_list:
        if values is not None:
            raise TypeError("Pass `values` only with a starts array, not with PatchBoundaries.")
        rows_starts, rows_values = [], []
        length = None
        for i, b in enumerate(boundaries):
            window = np.asarray(b.values, dtype=np.float64)
            if window.ndim == 1:
                window = window[:, None]
            names = [str(c) for c in b.components]
            if length is None:
                length = window.shape[0]
            if window.shape[0] != length:
                raise ValueError(
                    f"All windows must have the same length: PatchBoundaries 0 has {length} "
                    f"steps, PatchBoundaries {i} has {window.shape[0]}."
                )
            checked = _check_starts(b.starts, window.shape[1], window.shape[0], names)
            rows_starts.extend(checked)
            rows_values.append(window.T)  # (C, L)
        mask = np.zeros((len(rows_starts), length), dtype=bool)
        for r, row in enumerate(rows_starts):
            mask[r, row] = True
        return mask, np.concatenate(rows_values, axis=0)

    if isinstance(boundaries, Sequence) and not isinstance(boundaries, (str, bytes)) \
            and len(boundaries) == 0:
        raise ValueError("No boundaries given: the list of PatchBoundaries is empty.")
    if values is None:
        raise TypeError(
            "Pass PatchBoundaries (one or a list), or a starts array together with `values`."
        )
    window = np.asarray(values, dtype=np.float64)
    if window.ndim == 1:
        window = window[None, :]
    if window.ndim != 2:
        raise ValueError(f"values must have shape (L,) or (R, L); got shape {window.shape}.")
    if window.size == 0:
        raise ValueError(f"values is empty (shape {window.shape}).")
    starts = np.asarray(boundaries)
    if starts.ndim == 1:
        starts = starts[None, :]
    if starts.ndim == 2 and starts.shape[0] != window.shape[0]:
        raise ValueError(
            f"starts has {starts.shape[0]} row(s) but values has {window.shape[0]}: pass starts "
            "(R, N) with values (R, L), one row per window and component (for darts windows of "
            "shape (L, C), pass the PatchBoundaries objects themselves)."
        )
    names = [f"row {r}" for r in range(window.shape[0])]
    checked = _check_starts(starts, window.shape[0], window.shape[1], names)
    mask = np.zeros(window.shape, dtype=bool)
    np.put_along_axis(mask, checked, True, axis=1)
    return mask, window


def plot_boundary_statistics(
    boundaries: Any,
    values: Any = None,
    *,
    n_bins: int = 10,
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
) -> Figure:
    """Where the patcher puts boundaries: against local volatility, position, patch length and
    the uniform grid.

    Four panels, computed over all given windows and components (rows):

    1. **Volatility.** Every position ``t = 1 .. L-1`` of every row is binned by the size of
       the step into it, ``|x_t - x_{t-1}|`` of the row standardised by its own standard
       deviation (as the patcher sees it), into ``n_bins`` quantile bins; each bar is the
       fraction of positions in the bin where a patch starts. The dashed line is the overall
       rate, what a patcher blind to the values would give; a volatility-seeking patcher has
       rising bars.
    2. **Position.** How often each position ``1 .. L-1`` starts a patch (position 0 always
       does and is left out), against the count a uniformly random patcher would give.
    3. **Patch lengths.** Histogram of the lengths of all patches.
    4. **Shift from the uniform grid.** Histogram of ``s_j - g_j`` over every interior start,
       with ``g = uniform_starts(L, N)`` the grid a new learned patcher decodes: where (and how
       far) the boundaries moved. Drawn when every row has the same number of patches ``N``.

    Parameters
    ----------
    boundaries
        A :class:`~reinpatch_forecast.darts.PatchBoundaries` or a list of them (for instance
        ``model.patch_boundaries([s[:t] for t in cutoffs])``), all with the same window length
        ``L``; or a starts array ``(N,)`` or ``(R, N)`` given together with ``values``.
    values
        Only with a starts array: the windows, ``(L,)`` or ``(R, L)``, one row per row of
        starts.
    n_bins
        Volatility bins (quantiles of the step sizes); fewer are used when many steps tie.
    title
        Figure title; default a summary.
    figsize
        Figure size in inches.

    Returns
    -------
    matplotlib.figure.Figure
        Four axes: volatility (one bar per bin in ``ax.patches``), position (one filled step
        patch), patch lengths (one bar per length) and the shift from the uniform grid.

    Raises
    ------
    ValueError
        Empty input, windows of different lengths or shorter than 2 steps, starts and values
        with different numbers of rows, invalid starts (see :func:`plot_segmentation`), or
        ``n_bins < 1``.
    TypeError
        ``values`` missing for a starts array, or given with PatchBoundaries.

    Examples
    --------
    >>> import numpy as np
    >>> from reinpatch_forecast.plotting import plot_boundary_statistics
    >>> values = np.cumsum(np.random.default_rng(0).normal(size=(8, 48)), axis=1)
    >>> starts = np.tile([0, 6, 12, 18, 24, 30, 36, 42], (8, 1))
    >>> fig = plot_boundary_statistics(starts, values, n_bins=4)
    >>> len(fig.axes)
    4
    """
    if int(n_bins) < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}.")
    mask, window = _statistics_rows(boundaries, values)  # (R, L), (R, L)
    n_rows, length = window.shape
    if length < 2:
        raise ValueError(f"The windows have {length} step(s); statistics need at least 2.")

    std = window.std(axis=1, keepdims=True)
    std = np.where(std > 0, std, 1.0)
    jumps = np.abs(np.diff(window / std, axis=1)).ravel()  # (R * (L-1),)
    starts_here = mask[:, 1:].ravel()  # (R * (L-1),)
    base_rate = float(starts_here.mean())

    edges = np.unique(np.quantile(jumps, np.linspace(0.0, 1.0, int(n_bins) + 1)))
    if edges.size < 2:
        edges = np.array([jumps.min(), jumps.max() + 1e-12])
    bin_of = np.clip(np.searchsorted(edges, jumps, side="right") - 1, 0, edges.size - 2)
    n_used = edges.size - 1
    counts = np.bincount(bin_of, minlength=n_used)
    rates = np.bincount(bin_of, weights=starts_here, minlength=n_used) / np.maximum(counts, 1)
    mean_jump = np.bincount(bin_of, weights=jumps, minlength=n_used) / np.maximum(counts, 1)

    figure = Figure(figsize=figsize or (10.0, 9.5), layout="constrained")
    ax_vol, ax_pos, ax_len, ax_shift = figure.subplots(4, 1)

    ax_vol.bar(np.arange(n_used), rates, width=0.8, color=DEFAULT_SHADES[0])
    ax_vol.axhline(base_rate, color="0.3", ls="--", lw=1, label=f"overall rate {base_rate:.3f}")
    ax_vol.set_xticks(np.arange(n_used), [f"{m:.2g}" for m in mean_jump], fontsize=8)
    ax_vol.set_xlabel("mean |step| into the position, standardised (quantile bins)")
    ax_vol.set_ylabel("P(patch starts)")
    ax_vol.set_title("Boundaries against local volatility", fontsize=9, loc="left")
    ax_vol.legend(fontsize=8, loc="upper left")

    per_position = mask[:, 1:].sum(axis=0)  # (L-1,)
    ax_pos.stairs(per_position, np.arange(0.5, length), fill=True, color=DEFAULT_SHADES[1],
                  alpha=0.8)
    expected = per_position.sum() / (length - 1)
    ax_pos.axhline(expected, color="0.3", ls="--", lw=1,
                   label=f"uniformly random starts ({expected:.1f})")
    ax_pos.set_xlim(0, length)
    ax_pos.set_xlabel(f"position in the window (0 .. {length - 1}; 0 always starts a patch)")
    ax_pos.set_ylabel("patch starts")
    ax_pos.set_title("Boundaries against position in the window", fontsize=9, loc="left")
    ax_pos.legend(fontsize=8, loc="upper left")

    # every patch runs from its start to the next start of the same row (or to L)
    row_of, start_at = np.nonzero(mask)  # row-major, so sorted by row, then position
    next_start = np.append(start_at[1:], length)
    last_of_row = np.append(row_of[1:] != row_of[:-1], True)
    all_lengths = np.where(last_of_row, length, next_start) - start_at
    bins = np.arange(1, all_lengths.max() + 2) - 0.5
    ax_len.hist(all_lengths, bins=bins, color="0.5")
    ax_len.set_xlabel("patch length (steps)")
    ax_len.set_ylabel("patches")
    ax_len.set_title(
        f"Patch lengths (mean {all_lengths.mean():.1f}, std {all_lengths.std():.1f})",
        fontsize=9, loc="left",
    )

    _plot_grid_shift(ax_shift, mask)
    figure.suptitle(
        title or f"Boundary statistics over {n_rows} window(s) x component(s), L = {length}",
        fontsize=10,
    )
    return figure


def _plot_grid_shift(ax, mask: np.ndarray) -> None:
    """Histogram of interior starts minus the uniform grid's, on ``ax``, from ``(R, L)`` masks."""
    from .nn.grid import uniform_starts

    counts = mask.sum(axis=1)
    ax.set_title("Shift of the starts from the uniform grid", fontsize=9, loc="left")
    ax.set_xlabel("start minus the uniform grid's start (steps)")
    ax.set_ylabel("starts")
    if counts.min() != counts.max() or counts[0] < 2:
        ax.text(0.5, 0.5, "rows with different numbers of patches (or one patch): no grid",
                ha="center", va="center", transform=ax.transAxes, fontsize=8)
        return
    length = mask.shape[1]
    starts = np.nonzero(mask)[1].reshape(mask.shape[0], -1)  # (R, N), sorted per row
    grid = uniform_starts(length, starts.shape[1]).numpy()  # (N,)
    shift = (starts[:, 1:] - grid[1:]).ravel()
    bound = max(1, int(np.abs(shift).max()))
    ax.hist(shift, bins=np.arange(-bound, bound + 2) - 0.5, color=DEFAULT_SHADES[0])
    ax.axvline(0, color="0.3", ls="--", lw=1)
    ax.set_title(
        f"Shift of the starts from the uniform grid (mean |shift| {np.abs(shift).mean():.2f}, "
        f"{(shift == 0).mean():.0%} on the grid)", fontsize=9, loc="left",
    )


# --------------------------------------------------------------------------------------------
# Forecasts
# --------------------------------------------------------------------------------------------


def _continue_index(history_index: pd.Index, n: int) -> pd.Index:
    """The ``n`` steps after a history's index (for a forecast given as a bare array)."""
    if isinstance(history_index, pd.DatetimeIndex):
        freq = history_index.freq or (
            pd.infer_freq(history_index) if len(history_index) >= 3 else None
        )
        if freq is None:
            raise ValueError(
                "The forecast is a bare array and the history's dates have no regular "
                "frequency: pass the forecast as a TimeSeries or pandas object with its dates."
            )
        return pd.date_range(history_index[-1], periods=n + 1, freq=freq)[1:]
    step = 1 if len(history_index) < 2 else history_index[-1] - history_index[-2]
    return pd.Index(history_index[-1] + step * np.arange(1, n + 1))


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
            raise ValueError(
                f"quantiles must be (low, high) with 0 < low < high < 1, got {quantiles!r}."
            )
    if max_history is not None and int(max_history) < 1:
        raise ValueError(f"max_history must be >= 1, got {max_history}.")
    hist_index, hist_values, names = _series_of(history, "history")
    fc_index, fc_samples, fc_names = _samples_of(forecast, "forecast")
    if fc_samples.shape[0] == 0 or fc_samples.shape[1] == 0:
        raise ValueError(f"forecast is empty (shape {fc_samples.shape[:2]}).")
    if fc_samples.shape[1] != hist_values.shape[1]:
        raise ValueError(
            f"forecast has {fc_samples.shape[1]} component(s) but history has "
            f"{hist_values.shape[1]} ({names})."
        )
    if not (_is_timeseries(forecast) or isinstance(forecast, (pd.Series, pd.DataFrame))):
        fc_index = _continue_index(hist_index, fc_samples.shape[0])
    actual_parts = None
    if actual is not None:
        act_index, act_values, _ = _series_of(actual, "actual")
        if act_values.shape[1] != hist_values.shape[1]:
            raise ValueError(
                f"actual has {act_values.shape[1]} component(s) but history has "
                f"{hist_values.shape[1]} ({names})."
            )
        if not (_is_timeseries(actual) or isinstance(actual, (pd.Series, pd.DataFrame))):
            act_index = _continue_index(hist_index, act_values.shape[0])
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
    axes[-1].set_xlabel("time" if isinstance(hist_index, pd.DatetimeIndex) else "position")
    if title:
        figure.suptitle(title, fontsize=10)
    return figure
