"""The segmentation plot: one window cut into patches, one subplot per component."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..errors import ReinPatchInputError, ReinPatchTypeError
from ._inputs import _boundaries_window, _check_starts, _is_boundaries, _select, _series_of
from ._layout import (
    _SHADE_ALPHA,
    DEFAULT_SHADES,
    _edges,
    _label_time_axis,
    _new_figure,
    _x_values,
)


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
            raise ReinPatchTypeError(
                "Pass either a PatchBoundaries alone, or a window and its starts; got a "
                "PatchBoundaries and a second `boundaries` argument."
            )
        source = series_or_boundaries
        index = pd.Index(source.time_index)
        values, names = _boundaries_window(source)  # (L, C)
        starts = source.starts
        if values.ndim != 2 or values.shape[1] != len(names) or values.shape[0] != len(index):
            raise ReinPatchInputError(
                f"The PatchBoundaries is inconsistent: values of shape {values.shape}, "
                f"{len(index)} time stamps and {len(names)} components."
            )
    else:
        if boundaries is None:
            raise ReinPatchTypeError(
                "No patch starts given: pass a PatchBoundaries (ReinPatchModel.patch_boundaries"
                "()), or a window and its starts as `boundaries`."
            )
        index, values, names = _series_of(series_or_boundaries, "The window")
        if _is_boundaries(boundaries):
            length = len(boundaries.time_index)
            if values.shape[0] < length:
                raise ReinPatchInputError(
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
        raise ReinPatchInputError(
            f"The window has {length} step(s); a segmentation needs at least 2."
        )
    from_model = _is_boundaries(series_or_boundaries) or _is_boundaries(boundaries)
    starts = _check_starts(starts, len(names), length, names,
                           unused_slots=from_model)  # (C, N)
    coarse = None
    if coarse_starts is not None:
        coarse = _check_starts(coarse_starts, len(names), length, names, "coarse_starts")
        for row, fine, name in zip(coarse, starts, names):
            if not np.isin(row, fine).all():
                raise ReinPatchInputError(
                    f"coarse_starts of component {name!r} must be a subset of its starts "
                    f"(levels are nested); {sorted(set(row) - set(fine))} are not starts."
                )

    chosen = _select(names, components)
    edges = _edges(index)  # (L + 1,)
    x = _x_values(index)  # (L,)
    figure, axes = _new_figure(len(chosen), figsize, 1.9)
    for ax, c in zip(axes, chosen):
        row = starts[c][starts[c] < length]  # (n,): the used slots
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
    _label_time_axis(axes[-1], index)
    figure.suptitle(
        title or f"Patches of a window of {length} steps (dashed: patch starts"
        + ("; thick: coarse starts" if coarse is not None else "")
        + ("; red: patch means)" if show_means else ")"),
        fontsize=10,
    )
    return figure
