"""Input checks shared by the darts and sktime faces.

Every check raises early, at the public entry (``fit``, ``predict``, ``load``), with a message
that names the problem and the fix, instead of letting a bad input surface as a NaN forecast or
as a traceback from deep inside torch or darts.
"""

from __future__ import annotations

import os
import zipfile
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .errors import ReinPatchInputError, ReinPatchTypeError, SavedOnGPUError

__all__ = [
    "MAX_ABS_VALUE",
    "nonfinite_problem",
    "check_finite_values",
    "explain_non_numeric_y",
    "check_darts_series",
    "check_saved_file",
    "load_error",
]


#: Largest magnitude a series may reach. The network computes in float32, and both the instance
#: normalisation (a variance) and the training loss square deviations of the series: beyond about
#: 1.8e19 the squares overflow float32 (3.4e38) and the forecast becomes NaN. 1e18 leaves margin.
MAX_ABS_VALUE = 1e18


def nonfinite_problem(values: np.ndarray, index: Sequence | None = None) -> str | None:
    """Describe the NaN, infinite or too large values of ``values`` ``(T, ...)``; ``None`` if none.

    Parameters
    ----------
    values
        Array whose first axis is time.
    index
        Time labels of the first axis, used to say where the first bad value is.
    """
    values = np.asarray(values)
    if not np.issubdtype(values.dtype, np.floating):
        values = values.astype(np.float64)
    if values.size == 0:
        return None
    rows = values.reshape(len(values), -1)
    # fast path without temporary arrays: a NaN propagates to min/max, an inf is one of them
    low, high = float(rows.min()), float(rows.max())
    largest = max(abs(low), abs(high))
    if np.isfinite(largest) and largest <= MAX_ABS_VALUE:
        return None
    finite = np.isfinite(rows)
    if finite.all():
        where = int(np.flatnonzero((np.abs(rows) > MAX_ABS_VALUE).any(axis=1))[0])
        label = index[where] if index is not None else where
        return (
            f"has values up to {largest:.3g} in magnitude (first at {label}), beyond "
            f"{MAX_ABS_VALUE:.0e}: the network computes in float32 and squares deviations of the "
            "series, which would overflow. Rescale the series first (e.g. divide it by a "
            "constant, or use darts' Scaler / sktime's TabularToSeriesAdaptor(StandardScaler()))"
        )
    n_nan = int(np.isnan(rows).sum())
    n_inf = int(np.isinf(rows).sum())
    where = int(np.flatnonzero(~finite.all(axis=1))[0])
    label = index[where] if index is not None else where
    kinds = " and ".join(
        part for part in (f"{n_nan} NaN" if n_nan else "", f"{n_inf} infinite" if n_inf else "")
        if part
    )
    return (
        f"contains {kinds} value{'s' if n_nan + n_inf > 1 else ''} (first at {label}). "
        "The network needs finite values: fill missing values (e.g. darts' "
        "fill_missing_values, or sktime's Imputer) and replace or clip infinite ones"
    )


def check_finite_values(values: np.ndarray, name: str, index: Sequence | None = None,
                        hint: str = "") -> None:
    """Raise a ``ValueError`` if ``values`` has NaN, infinite or too large entries."""
    problem = nonfinite_problem(values, index)
    if problem is not None:
        raise ReinPatchInputError(f"{name} {problem}{hint}.")


def explain_non_numeric_y(error: TypeError, y: Any, name: str = "y") -> TypeError | None:
    """sktime's error for a non-numeric ``y``, made to name the columns and the fix.

    sktime rejects categorical (string, category, object) columns in ``y`` before a forecaster
    sees the data, with a ``TypeError`` that does not say which columns or what to do. Other
    errors give ``None``.
    """
    if "categorical" not in str(error):
        return None
    frame = y.to_frame() if isinstance(y, pd.Series) else y
    columns = ""
    if isinstance(frame, pd.DataFrame):
        bad = [
            f"{column!r} ({dtype})" for column, dtype in frame.dtypes.items()
            if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype))
        ]
        columns = f": {', '.join(bad)}" if bad else ""
    return ReinPatchTypeError(
        f"{name} has non-numeric (categorical) columns{columns}. ReinPatchForecaster forecasts "
        f"numeric series only: convert these columns to numbers (e.g. {name}[col] = "
        f"pd.to_numeric({name}[col])) or drop them ({name}.select_dtypes('number'))."
    )


def check_darts_series(series: Any, argument: str, min_length: int, purpose: str,
                       tail: int | None = None, fix: str = "") -> None:
    """Check darts series: every one long enough, and finite.

    Parameters
    ----------
    series
        A ``TimeSeries``, a sequence of them, or ``None`` (nothing to check).
    argument
        Name of the argument, for the message (``"series"``, ``"val_series"``).
    min_length
        Steps every series needs.
    purpose
        What the steps are needed for, e.g. ``"a training window (...)"``.
    tail
        Check only the last ``tail`` steps for finiteness (the window a forecast reads).
    fix
        How to fix a too short series.
    """
    if series is None:
        return
    from darts import TimeSeries

    single = isinstance(series, TimeSeries)
    series_list = [series] if single else list(series)
    if not series_list:
        raise ReinPatchInputError(f"`{argument}` is an empty list: pass at least one series.")
    for i, s in enumerate(series_list):
        name = f"`{argument}`" if single else f"`{argument}[{i}]`"
        if len(s) < min_length:
            raise ReinPatchInputError(
                f"{name} has {len(s)} time steps, but {purpose} needs at least {min_length}. "
                f"{fix}"
            )
        values = s.all_values(copy=False)  # (T, C, S)
        if tail is not None:
            values = values[-tail:]
            name = f"The last {tail} steps of {name} (the window the forecast reads)"
        if nonfinite_problem(values) is None:
            # The time labels only serve the message: slicing a pandas index costs more than
            # the check itself, a per-series cost a panel of thousands of series would pay.
            continue
        index = s.time_index if tail is None else s.time_index[-tail:]
        check_finite_values(values, name, index)


def check_saved_file(path: str | os.PathLike, what: str = "saved model") -> None:
    """Raise a ``ValueError`` naming ``path`` if it is not an intact ``torch.save`` file.

    ``torch.save`` (and Lightning's checkpoints) write zip archives with a CRC-32 checksum per
    member: a truncated file is no longer a zip archive, and a corrupted one fails its checksum.
    Torch itself does not verify the checksums when loading, so a corrupted checkpoint can load
    silently with wrong weights; this check reads the file once (fast) and catches both.
    """
    path = os.fspath(path)
    fix = (
        "Re-save the model (model.save(path)) from the session that trained it, or load a "
        "checkpoint written during training with ReinPatchModel.load_from_checkpoint("
        "model_name, work_dir=...)."
    )
    if not zipfile.is_zipfile(path):
        size = os.path.getsize(path)
        raise ReinPatchInputError(
            f"The {what} {path!r} ({size} bytes) is truncated or corrupted: it is not a file "
            f"written by torch.save / ReinPatchModel.save. {fix}"
        )
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            if any(info.CRC == 0 and info.file_size > 0 for info in members):
                return  # written without checksums (torch.serialization.set_crc32_options)
            broken = archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
        raise ReinPatchInputError(
            f"The {what} {path!r} is truncated or corrupted ({type(error).__name__}: {error}). "
            f"{fix}"
        ) from error
    if broken is not None:
        raise ReinPatchInputError(
            f"The {what} {path!r} is corrupted: its part {broken!r} fails its checksum. {fix}"
        )


def load_error(path: str | os.PathLike, error: BaseException) -> Exception:
    """A clear error for a saved model that cannot be read; ``error`` is the low-level one.

    Called after :func:`check_saved_file` found the files intact, so the file is either a model
    saved on a GPU (then: ``map_location="cpu"``) or not a ``ReinPatchModel`` file at all.
    """
    path = os.fspath(path)
    detail = f"{type(error).__name__}: {error}".strip()
    if len(detail) > 300:
        detail = detail[:300] + "..."
    if "cuda" in str(error).lower():
        return SavedOnGPUError(
            f"Cannot load the model at {path!r} on this machine: it was saved on a GPU "
            f"({detail}). Load it on the CPU with map_location='cpu', e.g. "
            f"ReinPatchModel.load({path!r}, map_location='cpu')."
        )
    return ReinPatchInputError(
        f"Cannot load {path!r} as a ReinPatchModel ({detail}): it is not a model saved with "
        "ReinPatchModel.save, or it was saved by an incompatible version of reinpatch-forecast "
        "or darts. Re-save the model with model.save(path) from the session that trained it."
    )
