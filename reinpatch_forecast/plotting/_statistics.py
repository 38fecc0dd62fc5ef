"""The boundary-statistics plot: where a patcher puts boundaries, over many windows.

The inputs (PatchBoundaries or a starts array with its windows) are first flattened into rows,
one window of one component each, as boolean start masks ``(R, L)``; every panel is computed
from those masks and the rows' values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..errors import ReinPatchInputError, ReinPatchTypeError
from ._inputs import _boundaries_window, _check_starts, _is_boundaries
from ._layout import DEFAULT_SHADES


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
            raise ReinPatchTypeError(
                "Pass `values` only with a starts array, not with PatchBoundaries."
            )
        rows_starts, rows_values = [], []
        length = None
        for i, b in enumerate(boundaries):
            window, names = _boundaries_window(b)  # (L, C)
            if length is None:
                length = window.shape[0]
            if window.shape[0] != length:
                raise ReinPatchInputError(
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
        raise ReinPatchInputError("No boundaries given: the list of PatchBoundaries is empty.")
    if values is None:
        raise ReinPatchTypeError(
            "Pass PatchBoundaries (one or a list), or a starts array together with `values`."
        )
    window = np.asarray(values, dtype=np.float64)
    if window.ndim == 1:
        window = window[None, :]
    if window.ndim != 2:
        raise ReinPatchInputError(
            f"values must have shape (L,) or (R, L); got shape {window.shape}."
        )
    if window.size == 0:
        raise ReinPatchInputError(f"values is empty (shape {window.shape}).")
    starts = np.asarray(boundaries)
    if starts.ndim == 1:
        starts = starts[None, :]
    if starts.ndim == 2 and starts.shape[0] != window.shape[0]:
        raise ReinPatchInputError(
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
        raise ReinPatchInputError(f"n_bins must be >= 1, got {n_bins}.")
    mask, window = _statistics_rows(boundaries, values)  # (R, L), (R, L)
    n_rows, length = window.shape
    if length < 2:
        raise ReinPatchInputError(f"The windows have {length} step(s); statistics need at least 2.")

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
    from ..nn.grid import uniform_starts

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
