"""Input normalisation and validation shared by the plots.

Series-like inputs (darts ``TimeSeries``, pandas objects, numpy arrays) become an index, a
values array and component names; patch starts are checked once, with messages that name the
offending component. darts is never imported here: a ``TimeSeries`` is recognised only if darts
is already loaded.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ReinPatchInputError


def _is_timeseries(obj: Any) -> bool:
    """Whether ``obj`` is a darts ``TimeSeries`` (without importing darts)."""
    darts = sys.modules.get("darts")
    return darts is not None and isinstance(obj, getattr(darts, "TimeSeries", ()))


def _is_boundaries(obj: Any) -> bool:
    """Whether ``obj`` looks like a ``PatchBoundaries`` (duck-typed, so no darts import)."""
    return all(hasattr(obj, name) for name in ("time_index", "values", "starts", "components"))


def _boundaries_window(boundaries: Any) -> tuple[np.ndarray, list[str]]:
    """Values ``(L, C)`` (a 1-D window as one component) and component names of a
    ``PatchBoundaries``; not checked against its time index or starts."""
    values = np.asarray(boundaries.values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    return values, [str(c) for c in boundaries.components]


def _samples_of(obj: Any, name: str) -> tuple[pd.Index, np.ndarray, list[str]]:
    """Index, values ``(T, C, S)`` and component names of a non-empty series-like input."""
    index, samples, names = _any_samples_of(obj, name)
    if samples.shape[0] == 0 or samples.shape[1] == 0:
        raise ReinPatchInputError(f"{name} is empty (shape {samples.shape[:2]}).")
    return index, samples, names


def _any_samples_of(obj: Any, name: str) -> tuple[pd.Index, np.ndarray, list[str]]:
    """Index, values ``(T, C, S)`` and component names of a series-like input, maybe empty."""
    if _is_timeseries(obj):
        values = np.asarray(obj.all_values(copy=False), dtype=np.float64)  # (T, C, S)
        return pd.Index(obj.time_index), values, [str(c) for c in obj.components]
    if isinstance(obj, pd.Series):
        values = obj.to_numpy(dtype=np.float64)[:, None, None]
        return pd.Index(obj.index), values, [str(obj.name) if obj.name is not None else "0"]
    if isinstance(obj, pd.DataFrame):
        non_numeric = [str(c) for c in obj.columns if not pd.api.types.is_numeric_dtype(obj[c])]
        if non_numeric:
            raise ReinPatchInputError(f"{name} has non-numeric column(s) {non_numeric}.")
        values = obj.to_numpy(dtype=np.float64)[:, :, None]
        return pd.Index(obj.index), values, [str(c) for c in obj.columns]
    try:
        array = np.asarray(obj, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ReinPatchInputError(
            f"{name} must be a darts TimeSeries, a pandas Series/DataFrame or a numeric array; "
            f"got {type(obj).__name__}."
        ) from error
    if array.ndim == 1:
        array = array[:, None, None]
    elif array.ndim == 2:
        array = array[:, :, None]
    elif array.ndim != 3:
        raise ReinPatchInputError(
            f"{name} must have shape (T,), (T, C) or (T, C, S); got shape {array.shape}."
        )
    return pd.RangeIndex(array.shape[0]), array, [str(i) for i in range(array.shape[1])]


def _series_of(obj: Any, name: str) -> tuple[pd.Index, np.ndarray, list[str]]:
    """Index, values ``(T, C)`` (the sample median if stochastic) and component names."""
    index, samples, names = _samples_of(obj, name)
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
                raise ReinPatchInputError(
                    f"Component index {component} out of range: there are {len(names)} "
                    f"components ({names})."
                )
            chosen.append(int(component) % len(names))
        elif str(component) in names:
            chosen.append(names.index(str(component)))
        else:
            raise ReinPatchInputError(
                f"Unknown component {component!r}; the components are {names}."
            )
    if not chosen:
        raise ReinPatchInputError("components is empty: name at least one component to draw.")
    return chosen


def _check_starts(
    starts: Any, n_components: int, length: int, names: list[str], what: str = "starts",
    unused_slots: bool = False,
) -> np.ndarray:
    """Validate patch starts and return them as an int64 array ``(C, N)``.

    A 1-D ``(N,)`` array applies to every component. With ``unused_slots`` (the starts of a
    ``PatchBoundaries``), trailing entries equal to ``length`` are the unused token slots of a
    model with an at-most budget: no patch.
    """
    array = np.asarray(starts)
    if array.size == 0:
        raise ReinPatchInputError(
            f"{what} is empty: every window needs at least one patch, starting at position 0."
        )
    if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise ReinPatchInputError(f"{what} must hold integer positions, got dtype {array.dtype}.")
    if np.issubdtype(array.dtype, np.floating):
        if not np.all(np.isfinite(array)) or not np.all(array == np.round(array)):
            raise ReinPatchInputError(f"{what} must hold integer positions, got {array.tolist()}.")
    array = array.astype(np.int64)
    if array.ndim == 1:
        array = np.broadcast_to(array, (n_components, array.shape[0]))
    if array.ndim != 2:
        raise ReinPatchInputError(
            f"{what} must have shape (N,) or (C, N); got shape {array.shape}."
        )
    if array.shape[0] != n_components:
        raise ReinPatchInputError(
            f"{what} has {array.shape[0]} rows but the window has {n_components} component(s) "
            f"({names}): pass one row of starts per component, shape (C, N)."
        )
    for row, name in zip(array, names):
        if row[0] != 0:
            raise ReinPatchInputError(
                f"{what} of component {name!r} must begin at 0 (position 0 always starts the "
                f"first patch); got {row.tolist()}."
            )
        used = int((row < length).sum())
        if unused_slots and 0 < used < len(row) and np.all(row[used:] == length):
            row = row[:used]  # unused slots (an at-most budget) trail at `length`
        if np.any(np.diff(row) <= 0):
            raise ReinPatchInputError(
                f"{what} of component {name!r} must be strictly increasing (sorted, no "
                f"repeats); got {row.tolist()}."
            )
        if row[-1] >= length:
            raise ReinPatchInputError(
                f"{what} of component {name!r} must lie in [0, {length}) for a window of "
                f"{length} steps; got {row.tolist()}."
            )
    return np.ascontiguousarray(array)
