"""The standard LTSF split, its train-only scaling and stride-1 windows.

The Informer/Autoformer/PatchTST/DLinear/Time-Series-Library split with its look-back overlap.
Scoring a forecaster on those windows is the benchmarks' part, not the package's.

Shape legend
------------
T : rows of a split (time steps)
C : channels (numeric columns)
L : look-back length
H : forecast horizon
W : number of stride-1 windows of a split, ``T - L - H + 1``
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..checks import check_finite_values, check_numeric_columns, numeric_values
from ..errors import ReinPatchInputError
from .catalog import LTSF_DATASETS, LTSF_FAMILIES

#: ETT split lengths in hours: 12 / 4 / 4 months of 30 days.
_ETT_HOURS = (12 * 30 * 24, 4 * 30 * 24, 4 * 30 * 24)
#: Rows per hour of each ETT family.
_ETT_ROWS_PER_HOUR = {"ETTh": 1, "ETTm": 4}

_SPLITS = ("train", "val", "test")


def split_family(name_or_family: str) -> str:
    """Map a dataset name or a family name to its split family.

    Parameters
    ----------
    name_or_family
        A key of :data:`LTSF_DATASETS` (case-insensitive) or one of :data:`LTSF_FAMILIES`.

    Returns
    -------
    str
        ``"ETTh"``, ``"ETTm"`` or ``"custom"``.
    """
    if name_or_family in LTSF_FAMILIES:
        return name_or_family
    lowered = str(name_or_family).lower()
    for name, family in LTSF_DATASETS.items():
        if name.lower() == lowered:
            return family
    for family in LTSF_FAMILIES:
        if family.lower() == lowered:
            return family
    raise ReinPatchInputError(
        f"Unknown dataset or split family {name_or_family!r}: use one of "
        f"{list(LTSF_DATASETS)} or a family {list(LTSF_FAMILIES)} (other 70/10/20 datasets such "
        "as electricity, traffic or exchange_rate use 'custom')."
    )


def split_borders(name_or_family: str, n_rows: int, lookback: int) -> dict[str, tuple[int, int]]:
    """Row ranges of the standard LTSF train / val / test split.

    Val and test start ``lookback`` rows before their boundary, so the first target window
    begins exactly at the boundary.

    Parameters
    ----------
    name_or_family
        Dataset name (``"ETTh1"``, ...) or split family (``"ETTh"``, ``"ETTm"``, ``"custom"``).
    n_rows
        Rows of the whole series.
    lookback
        ``L``.

    Returns
    -------
    dict of str to (int, int)
        ``{"train": (0, n_train), "val": (n_train - L, n_train + n_val),
        "test": (n - n_test - L, n)}``: half-open ``[start, stop)`` row ranges. For ETTh the
        borders are 8640 / 11520 / 14400 (ETTm: ×4) and later rows are unused; for custom
        ``n_train = int(n * 0.7)``, ``n_test = int(n * 0.2)``, ``n_val = n - n_train - n_test``.

    Raises
    ------
    ValueError
        Unknown family, ``lookback < 1``, too few rows, or a look-back reaching before row 0.
    """
    family = split_family(name_or_family)
    n_rows = int(n_rows)
    lookback = int(lookback)
    if lookback < 1:
        raise ReinPatchInputError(f"lookback must be >= 1, got {lookback}.")
    if family in _ETT_ROWS_PER_HOUR:
        k = _ETT_ROWS_PER_HOUR[family]
        n_train, n_val, n_test = (k * h for h in _ETT_HOURS)
        end = n_train + n_val + n_test
        if n_rows < end:
            raise ReinPatchInputError(
                f"The {family} split needs at least {end} rows, the series has {n_rows}."
            )
        train = (0, n_train)
        val = (n_train - lookback, n_train + n_val)
        test = (n_train + n_val - lookback, end)
    else:
        n_train = int(n_rows * 0.7)
        n_test = int(n_rows * 0.2)
        n_val = n_rows - n_train - n_test
        if min(n_train, n_val, n_test) < 1:
            raise ReinPatchInputError(f"Too few rows ({n_rows}) for a 70/10/20 split.")
        train = (0, n_train)
        val = (n_train - lookback, n_train + n_val)
        test = (n_rows - n_test - lookback, n_rows)
    if val[0] < 0:
        raise ReinPatchInputError(
            f"lookback={lookback} is longer than the training part ({train[1]} rows) of the "
            f"{family} split."
        )
    return {"train": train, "val": val, "test": test}


@dataclass(frozen=True)
class LTSFSplits:
    """A dataset split, scaled with statistics of the training rows.

    Attributes
    ----------
    train, val, test
        float32 arrays of shape ``(T_split, C)``, standard-scaled; val and test include their
        ``L`` look-back rows.
    mean, std
        float64 arrays of shape ``(C,)``: the scaler fitted on the training rows (population
        std, ``ddof=0``; a constant channel gets ``std = 1`` as in sklearn).
    columns
        The ``C`` column names, in array order.
    borders
        ``{"train" | "val" | "test": (start, stop)}`` row ranges in the original frame
        (see :func:`split_borders`).
    dates
        ``{"train" | "val" | "test": DatetimeIndex}`` of length ``T_split``: the frame's index
        over each split's rows.
    family
        The split family (``"ETTh"``, ``"ETTm"`` or ``"custom"``).
    lookback, horizon
        ``L`` and ``H`` the split was prepared for.
    """

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    columns: tuple[str, ...]
    borders: dict[str, tuple[int, int]]
    dates: dict[str, pd.Index]
    family: str
    lookback: int
    horizon: int

    def split(self, name: str) -> np.ndarray:
        """Return the scaled array ``(T_split, C)`` of ``"train"``, ``"val"`` or ``"test"``."""
        if name not in _SPLITS:
            raise ReinPatchInputError(f"Unknown split {name!r}: use one of {list(_SPLITS)}.")
        return getattr(self, name)

    def n_windows(self, name: str) -> int:
        """Number of stride-1 windows ``T_split - L - H + 1`` of a split."""
        return self.split(name).shape[0] - self.lookback - self.horizon + 1

    def windows(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Stride-1 windows of a split (read-only views, see :func:`sliding_windows`).

        Returns
        -------
        x : numpy.ndarray
            Shape ``(W, L, C)``.
        y : numpy.ndarray
            Shape ``(W, H, C)``.
        """
        return sliding_windows(self.split(name), self.lookback, self.horizon)

    def inverse_transform(self, array: np.ndarray) -> np.ndarray:
        """Undo the scaling: ``array * std + mean`` over the last axis (``..., C``), float64."""
        return np.asarray(array, dtype=np.float64) * self.std + self.mean


def prepare_ltsf(
    frame: pd.DataFrame,
    family: str,
    lookback: int,
    horizon: int,
    target_columns: Sequence[str] | None = None,
) -> LTSFSplits:
    """Split a frame by the standard protocol and scale it with train-only statistics.

    Parameters
    ----------
    frame
        Shape ``(n_rows, C_all)``: numeric (or boolean, read as 0 / 1) columns, indexed by date
        (as from :func:`load_ltsf_frame`).
    family
        Dataset name or split family (see :func:`split_borders`).
    lookback
        ``L``.
    horizon
        ``H``; every split must yield at least one window.
    target_columns
        Columns to keep, in this order. ``None`` keeps them all (the multivariate ``"M"``
        setting); ``["OT"]`` gives the univariate ``"S"`` setting. The scaler is fitted on the
        kept columns.

    Returns
    -------
    LTSFSplits
        float32 arrays ``(T_split, C)`` for train / val / test and the fitted scaler.

    Raises
    ------
    ValueError
        Unknown columns, non-numeric (also a ``TypeError``), NaN or infinite data, a bad
        ``lookback`` / ``horizon``, or a split too short for one window.
    """
    family = split_family(family)
    lookback = int(lookback)
    horizon = int(horizon)
    if horizon < 1:
        raise ReinPatchInputError(f"horizon must be >= 1, got {horizon}.")
    if target_columns is not None:
        cols = list(target_columns)
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise ReinPatchInputError(
                f"target_columns {missing} not in the frame (columns: {list(frame.columns)})."
            )
        if not cols:
            raise ReinPatchInputError("target_columns must name at least one column.")
        frame = frame[cols]
    check_numeric_columns(frame, "The frame")
    values = numeric_values(frame)  # (n_rows, C)
    # standardised below with train statistics: large values are fine, no limit
    check_finite_values(values, "The frame", frame.index, columns=frame.columns, limit=None,
                        fix="The LTSF protocol needs complete data: fill or drop those rows.")

    borders = split_borders(family, values.shape[0], lookback)
    for name, (start, stop) in borders.items():
        if stop - start - lookback - horizon + 1 < 1:
            raise ReinPatchInputError(
                f"The {name} split (rows {start}..{stop}) is too short for one window of "
                f"lookback {lookback} + horizon {horizon}."
            )

    train_start, train_stop = borders["train"]
    train_rows = values[train_start:train_stop]
    mean = train_rows.mean(axis=0)
    std = train_rows.std(axis=0, ddof=0)
    std = np.where(std == 0.0, 1.0, std)

    arrays = {
        name: np.ascontiguousarray(((values[start:stop] - mean) / std).astype(np.float32))
        for name, (start, stop) in borders.items()
    }
    dates = {name: frame.index[start:stop] for name, (start, stop) in borders.items()}
    return LTSFSplits(
        train=arrays["train"],
        val=arrays["val"],
        test=arrays["test"],
        mean=mean,
        std=std,
        columns=tuple(str(c) for c in frame.columns),
        borders=borders,
        dates=dates,
        family=family,
        lookback=lookback,
        horizon=horizon,
    )


# --------------------------------------------------------------------------------------------
# Windows
# --------------------------------------------------------------------------------------------


def sliding_windows(
    array: np.ndarray, lookback: int, horizon: int
) -> tuple[np.ndarray, np.ndarray]:
    """Stride-1 input / target windows as read-only views (no copy).

    Window ``i`` has input ``array[i : i+L]`` and target ``array[i+L : i+L+H]``.

    Parameters
    ----------
    array
        Shape ``(T, C)``.
    lookback
        ``L >= 1``.
    horizon
        ``H >= 1``.

    Returns
    -------
    x : numpy.ndarray
        Shape ``(W, L, C)`` with ``W = T - L - H + 1``; a view into ``array``.
    y : numpy.ndarray
        Shape ``(W, H, C)``; a view into ``array``.

    Raises
    ------
    ValueError
        ``array`` is not 2-D, ``L`` or ``H`` < 1, or ``T < L + H``.
    """
    array = np.asarray(array)
    lookback = int(lookback)
    horizon = int(horizon)
    if array.ndim != 2:
        raise ReinPatchInputError(f"array must have shape (T, C), got shape {array.shape}.")
    if lookback < 1 or horizon < 1:
        raise ReinPatchInputError(
            f"lookback and horizon must be >= 1, got {lookback} and {horizon}."
        )
    if array.shape[0] < lookback + horizon:
        raise ReinPatchInputError(
            f"A series of {array.shape[0]} rows has no window of lookback {lookback} + "
            f"horizon {horizon}."
        )
    # (W, C, L+H) -> (W, L+H, C); still a view.
    view = np.lib.stride_tricks.sliding_window_view(array, lookback + horizon, axis=0)
    view = view.transpose(0, 2, 1)
    return view[:, :lookback], view[:, lookback:]
