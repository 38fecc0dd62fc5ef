"""The LTSF benchmark datasets and their standard split.

The five long-term-forecasting (LTSF) datasets (ETTh1, ETTh2, ETTm1, ETTm2, weather), the
standard Informer/Autoformer/PatchTST/DLinear/Time-Series-Library split with its look-back
overlap, train-only standard scaling and stride-1 windows. Scoring a forecaster on those
windows is the benchmarks' part (``benchmarks/_protocol.py``), not the package's.

Two event-rich series (``EPF_FR_BE``: Belgian and French day-ahead electricity prices;
``vic_elec``: Victoria's half-hourly electricity demand) use the same reader and the ``custom``
(70/10/20) split; :data:`EVENT_DATASETS` says which of their columns are targets and which are
covariates (pass ``target_columns`` to :func:`prepare_ltsf` to keep only the targets).

About 600 lines: the files' reader, their column roles and their split borders belong
together.

This module depends on numpy and pandas only. It never looks for data in a fixed place: pass
``data_dir`` or set the environment variable ``REINPATCH_DATA_DIR``.

Shape legend
------------
T : rows of a split (time steps)
C : channels (numeric columns)
L : look-back length
H : forecast horizon
W : number of stride-1 windows of a split, ``T - L - H + 1``
"""

from __future__ import annotations

import importlib.resources
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd

__all__ = [
    "DATA_DIR_ENV_VAR",
    "EVENT_DATASETS",
    "EventDataset",
    "LTSF_DATASETS",
    "LTSF_FAMILIES",
    "LTSF_HORIZONS",
    "LTSFSplits",
    "load_ltsf_frame",
    "load_bundled_etth1",
    "split_family",
    "split_borders",
    "prepare_ltsf",
    "sliding_windows",
]

#: Environment variable naming the folder that holds ``NAME.csv.gz`` / ``NAME.csv``.
DATA_DIR_ENV_VAR = "REINPATCH_DATA_DIR"

#: Dataset name -> split family (``"ETTh"``, ``"ETTm"`` or ``"custom"``).
LTSF_DATASETS: Mapping[str, str] = MappingProxyType(
    {
        "ETTh1": "ETTh",
        "ETTh2": "ETTh",
        "ETTm1": "ETTm",
        "ETTm2": "ETTm",
        "weather": "custom",
        "EPF_FR_BE": "custom",
        "vic_elec": "custom",
    }
)


@dataclass(frozen=True)
class EventDataset:
    """The column roles of an event-rich dataset (one of :data:`EVENT_DATASETS`).

    The file itself is read by :func:`load_ltsf_frame` like an LTSF file (every column except
    ``date``, as float64, in file order, the targets last) and split by the ``custom``
    (70/10/20) rule; these roles say which of its columns to forecast and which are covariates.

    Attributes
    ----------
    name
        The dataset name (the file is ``NAME.csv.gz`` or ``NAME.csv`` in the data folder).
    step
        The spacing of the rows as a pandas offset alias (``"1h"``, ``"30min"``); the files
        have no gap and no repeated timestamp.
    target_columns
        The columns to forecast, in file order: pass them as ``target_columns`` to
        :func:`prepare_ltsf`.
    future_covariates
        Columns known in advance over the forecast horizon (forecasts, calendar flags).
    past_covariates
        Columns observed only up to the forecast origin.

    Raises
    ------
    ValueError
        No target column, or a column named in two roles.
    """

    name: str
    step: str
    target_columns: tuple[str, ...]
    future_covariates: tuple[str, ...] = ()
    past_covariates: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for field_name in ("target_columns", "future_covariates", "past_covariates"):
            value = getattr(self, field_name)
            if isinstance(value, str):
                raise ValueError(
                    f"EventDataset {self.name!r}: {field_name} must be a sequence of column "
                    f"names, got the string {value!r}; write ({value!r},)."
                )
            object.__setattr__(self, field_name, tuple(str(c) for c in value))
        if not self.target_columns:
            raise ValueError(f"EventDataset {self.name!r} needs at least one target column.")
        roles = self.target_columns + self.future_covariates + self.past_covariates
        repeated = sorted({c for c in roles if roles.count(c) > 1})
        if repeated:
            raise ValueError(
                f"EventDataset {self.name!r}: column(s) {repeated} are named more than once "
                "across target_columns, future_covariates and past_covariates; give each "
                "column one role."
            )

    @property
    def covariates(self) -> tuple[str, ...]:
        """The future covariates, then the past ones."""
        return self.future_covariates + self.past_covariates


#: Event-rich dataset name -> its column roles (both are also in :data:`LTSF_DATASETS`, family
#: ``"custom"``). ``EPF_FR_BE``: hourly day-ahead prices (EUR/MWh) of Belgium and France, with
#: France's day-ahead generation and system-load forecasts. ``vic_elec``: half-hourly demand
#: (MWh) of Victoria, Australia, with Melbourne's temperature and a public-holiday flag (0/1);
#: its dates are UTC (read as naive UTC, see :func:`load_ltsf_frame`), so local calendar
#: features need ``index.tz_localize("UTC").tz_convert("Australia/Melbourne")``.
EVENT_DATASETS: Mapping[str, EventDataset] = MappingProxyType(
    {
        "EPF_FR_BE": EventDataset(
            name="EPF_FR_BE",
            step="1h",
            target_columns=("BE_price", "FR_price"),
            future_covariates=("gen_forecast", "system_load"),
        ),
        "vic_elec": EventDataset(
            name="vic_elec",
            step="30min",
            target_columns=("demand",),
            future_covariates=("holiday",),
            past_covariates=("temperature",),
        ),
    }
)

#: The split families of the standard protocol.
LTSF_FAMILIES: tuple[str, ...] = ("ETTh", "ETTm", "custom")

#: The standard forecast horizons.
LTSF_HORIZONS: tuple[int, ...] = (96, 192, 336, 720)

#: ETT split lengths in hours: 12 / 4 / 4 months of 30 days.
_ETT_HOURS = (12 * 30 * 24, 4 * 30 * 24, 4 * 30 * 24)
#: Rows per hour of each ETT family.
_ETT_ROWS_PER_HOUR = {"ETTh": 1, "ETTm": 4}

_SPLITS = ("train", "val", "test")

# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def _looks_like_path(name_or_path: str | os.PathLike[str]) -> bool:
    if isinstance(name_or_path, os.PathLike):
        return True
    text = str(name_or_path)
    return (
        os.sep in text
        or (os.altsep is not None and os.altsep in text)
        or text.endswith((".csv", ".csv.gz"))
    )


def _resolve_csv(
    name_or_path: str | os.PathLike[str], data_dir: str | os.PathLike[str] | None
) -> Path:
    """Find the CSV file for a dataset name or an explicit path."""
    if _looks_like_path(name_or_path):
        path = Path(name_or_path).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"LTSF CSV file not found: {str(path)!r}.")
        return path

    name = str(name_or_path)
    if data_dir is None:
        env_value = os.environ.get(DATA_DIR_ENV_VAR)
        if not env_value:
            raise FileNotFoundError(
                f"No data folder given for dataset {name!r}: pass data_dir=... to "
                f"load_ltsf_frame, or set the environment variable {DATA_DIR_ENV_VAR} to the "
                f"folder that holds {name}.csv.gz or {name}.csv (or pass an explicit file path)."
            )
        data_dir = env_value
        source = f"environment variable {DATA_DIR_ENV_VAR}"
    else:
        source = "data_dir"
    folder = Path(data_dir).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"Data folder {str(folder)!r} (from {source}) does not exist.")
    candidates = [folder / f"{name}.csv.gz", folder / f"{name}.csv"]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"Dataset {name!r} not found in {str(folder)!r} (from {source}): looked for "
        + " and ".join(repr(c.name) for c in candidates)
        + "."
    )


def load_ltsf_frame(
    name_or_path: str | os.PathLike[str],
    data_dir: str | os.PathLike[str] | None = None,
) -> pd.DataFrame:
    """Read an LTSF CSV file into a numeric frame indexed by its dates.

    Parameters
    ----------
    name_or_path
        A dataset name such as ``"ETTh1"`` (looked up as ``NAME.csv.gz``, then ``NAME.csv``, in
        ``data_dir``), or an explicit path to a CSV file (plain or gzip) with a ``date`` column.
        A value counts as a path when it is a ``PathLike``, holds a path separator, or ends in
        ``.csv`` / ``.csv.gz``.
    data_dir
        Folder holding the dataset files. Default: the environment variable
        ``REINPATCH_DATA_DIR``. Ignored when ``name_or_path`` is a path.

    Returns
    -------
    pandas.DataFrame
        Shape ``(n_rows, C)``: every column except ``date``, as float64, in file order (the
        target ``OT`` last for the LTSF files, the targets last for :data:`EVENT_DATASETS`;
        integer flags such as ``vic_elec``'s ``holiday`` become 0.0 / 1.0). The index is the
        parsed ``date`` column (a ``DatetimeIndex`` named ``"date"``); it is kept as read, so
        repeated timestamps and gaps (``weather``) remain, since the protocol slices by row.
        The index has no time zone: dates written with a UTC offset (``2011-12-31T13:00:00Z``
        in ``vic_elec``) are converted to UTC and the zone is dropped, so every file gives a
        naive index (darts drops an index's zone anyway and logs a warning; naive and aware
        timestamps do not compare). Naive dates are kept as written.

    Raises
    ------
    FileNotFoundError
        The file is missing, or a name was given with neither ``data_dir`` nor the environment
        variable set.
    ValueError
        No ``date`` column, unparsable dates, no data column, a non-numeric column, or an
        empty / NaN cell.
    """
    path = _resolve_csv(name_or_path, data_dir)
    frame = pd.read_csv(path, encoding="utf-8")
    if "date" not in frame.columns:
        raise ValueError(
            f"{str(path)!r} has no 'date' column; an LTSF CSV needs one (columns found: "
            f"{list(frame.columns)[:10]})."
        )
    try:
        # utc=True: dates with an offset ('...Z', vic_elec) become UTC; naive dates keep their
        # wall-clock values once the zone is dropped again below.
        dates = pd.to_datetime(frame.pop("date"), utc=True)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"Could not parse the 'date' column of {str(path)!r}: {exc}") from exc
    if dates.isna().any():
        first = int(np.flatnonzero(dates.isna().to_numpy())[0])
        raise ValueError(f"{str(path)!r}: empty 'date' cell at data row {first}.")
    if frame.shape[1] == 0:
        raise ValueError(f"{str(path)!r} has no data column besides 'date'.")

    non_numeric = [
        str(col)
        for col in frame.columns
        if not pd.api.types.is_numeric_dtype(frame[col]) or pd.api.types.is_bool_dtype(frame[col])
    ]
    if non_numeric:
        raise ValueError(
            f"{str(path)!r}: non-numeric column(s) {non_numeric}; every column except 'date' "
            "must hold numbers."
        )
    nan_mask = frame.isna().to_numpy()
    if nan_mask.any():
        bad_cols = [str(c) for c, bad in zip(frame.columns, nan_mask.any(axis=0)) if bad]
        first_row = int(np.flatnonzero(nan_mask.any(axis=1))[0])
        raise ValueError(
            f"{str(path)!r}: {int(nan_mask.sum())} NaN / empty cell(s) in column(s) {bad_cols} "
            f"(first at data row {first_row})."
        )

    frame = frame.astype(np.float64)
    frame.index = pd.DatetimeIndex(dates, name="date").tz_localize(None)
    return frame


def load_bundled_etth1() -> pd.DataFrame:
    """Read the copy of ETTh1 shipped inside the package (``reinpatch_forecast/data``).

    Returns
    -------
    pandas.DataFrame
        Shape ``(17420, 7)``, as :func:`load_ltsf_frame` returns it.

    Raises
    ------
    FileNotFoundError
        The package has no ``data/ETTh1.csv.gz`` (for example an installation without its
        package data).
    """
    resource = importlib.resources.files("reinpatch_forecast") / "data" / "ETTh1.csv.gz"
    if not resource.is_file():
        raise FileNotFoundError(
            "The bundled ETTh1 copy (reinpatch_forecast/data/ETTh1.csv.gz) is not in this "
            "installation of reinpatch_forecast; reinstall the package with its package data, "
            f"or use load_ltsf_frame('ETTh1', data_dir=...) / the {DATA_DIR_ENV_VAR} "
            "environment variable."
        )
    with importlib.resources.as_file(resource) as path:
        return load_ltsf_frame(Path(path))


# --------------------------------------------------------------------------------------------
# Splits and scaling
# --------------------------------------------------------------------------------------------


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
    raise ValueError(
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
        raise ValueError(f"lookback must be >= 1, got {lookback}.")
    if family in _ETT_ROWS_PER_HOUR:
        k = _ETT_ROWS_PER_HOUR[family]
        n_train, n_val, n_test = (k * h for h in _ETT_HOURS)
        end = n_train + n_val + n_test
        if n_rows < end:
            raise ValueError(
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
            raise ValueError(f"Too few rows ({n_rows}) for a 70/10/20 split.")
        train = (0, n_train)
        val = (n_train - lookback, n_train + n_val)
        test = (n_rows - n_test - lookback, n_rows)
    if val[0] < 0:
        raise ValueError(
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
            raise ValueError(f"Unknown split {name!r}: use one of {list(_SPLITS)}.")
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
        Shape ``(n_rows, C_all)``: numeric columns, indexed by date (as from
        :func:`load_ltsf_frame`).
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
        Unknown columns, non-numeric or NaN data, a bad ``lookback`` / ``horizon``, or a split
        too short for one window.
    """
    family = split_family(family)
    lookback = int(lookback)
    horizon = int(horizon)
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}.")
    if target_columns is not None:
        cols = list(target_columns)
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise ValueError(
                f"target_columns {missing} not in the frame (columns: {list(frame.columns)})."
            )
        if not cols:
            raise ValueError("target_columns must name at least one column.")
        frame = frame[cols]
    non_numeric = [
        str(c)
        for c in frame.columns
        if not pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c])
    ]
    if non_numeric:
        raise ValueError(f"Non-numeric column(s) {non_numeric}.")
    values = frame.to_numpy(dtype=np.float64)
    if np.isnan(values).any():
        raise ValueError("The frame holds NaN cells; the LTSF protocol needs complete data.")

    borders = split_borders(family, values.shape[0], lookback)
    for name, (start, stop) in borders.items():
        if stop - start - lookback - horizon + 1 < 1:
            raise ValueError(
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
        raise ValueError(f"array must have shape (T, C), got shape {array.shape}.")
    if lookback < 1 or horizon < 1:
        raise ValueError(f"lookback and horizon must be >= 1, got {lookback} and {horizon}.")
    if array.shape[0] < lookback + horizon:
        raise ValueError(
            f"A series of {array.shape[0]} rows has no window of lookback {lookback} + "
            f"horizon {horizon}."
        )
    # (W, C, L+H) -> (W, L+H, C); still a view.
    view = np.lib.stride_tricks.sliding_window_view(array, lookback + horizon, axis=0)
    view = view.transpose(0, 2, 1)
    return view[:, :lookback], view[:, lookback:]
