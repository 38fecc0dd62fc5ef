"""The input checks: the one module every face calls.

The darts model, the sktime forecaster, the command line, foundation pretraining and the
datasets all check their inputs here, at the public entry (``fit``, ``predict``, ``load``, a
file read), so that one kind of bad input gets one message, with the problem and the fix, in
every face, instead of surfacing as a NaN forecast or a traceback from deep inside torch or
darts. The rules:

* **Numeric columns** (:func:`check_numeric_columns`): every column a model or a dataset reads
  holds numbers. Booleans are numbers (read as 0 / 1, e.g. a holiday flag), also as an object
  column of ``True`` / ``False`` with empty cells; text, categories and dates are not. The error
  (:class:`~reinpatch_forecast.errors.NonNumericColumnsError`) is both a ``ValueError`` and a
  ``TypeError``. :func:`numeric_values` reads the columns as floats.
* **Finite values** (:func:`check_finite_values`): no NaN or infinite value; the message counts
  them, names their columns and the first time label. Where the values reach the network as
  they are (the darts and sktime faces, the command line), also no value beyond
  :data:`MAX_ABS_VALUE` in magnitude; the datasets and the pretraining corpus standardise their
  series first, so they pass ``limit=None``.
* **darts series** (:func:`check_darts_series`): each long enough, and finite (over the window a
  forecast reads, for a forecast). Duck-typed, so that this module does not import darts.
* **Future covariates** (:func:`pad_future_covariates`): a step the forecast does not read takes
  the last known values before it.
* **Saved files** (:func:`check_saved_file`, :func:`load_error`): an intact ``torch.save``
  file, loadable on this machine.
* **Trained models** (:func:`check_trained`): a model forecasts (or exports its patches) only
  once it has weights, from ``fit`` or a loader.

This module depends on numpy, pandas and :mod:`reinpatch_forecast.errors` only: the datasets,
which depend on numpy and pandas only, call it too.
"""

from __future__ import annotations

import os
import zipfile
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .errors import NonNumericColumnsError, ReinPatchInputError, SavedOnGPUError

__all__ = [
    "MAX_ABS_VALUE",
    "FINITE_FIX",
    "NUMERIC_FIX",
    "non_numeric_columns",
    "check_numeric_columns",
    "numeric_values",
    "nonfinite_problem",
    "check_finite_values",
    "check_darts_series",
    "pad_future_covariates",
    "check_saved_file",
    "load_error",
    "check_trained",
]


#: Largest magnitude a series may reach. The network computes in float32, and both the instance
#: normalisation (a variance) and the training loss square deviations of the series: beyond about
#: 1.8e19 the squares overflow float32 (3.4e38) and the forecast becomes NaN. 1e18 leaves margin.
MAX_ABS_VALUE = 1e18

#: The fix of NaN / infinite values that :func:`check_finite_values` gives by default.
FINITE_FIX = (
    "The network needs finite values: fill missing values (e.g. darts' fill_missing_values, or "
    "sktime's Imputer) and replace or clip infinite ones."
)

#: The fix of values beyond :data:`MAX_ABS_VALUE`.
LARGE_FIX = (
    "Rescale the series first (e.g. divide it by a constant, or use darts' Scaler / sktime's "
    "TabularToSeriesAdaptor(StandardScaler()))."
)

#: The fix of non-numeric columns that :func:`check_numeric_columns` gives by default.
NUMERIC_FIX = "convert them to numbers (pd.to_numeric) or drop them."


def _quoted(names: Sequence[Any]) -> str:
    return ", ".join(repr(str(name)) for name in names)


def _is_numeric(column: pd.Series) -> bool:
    """Numbers, booleans, or an object column that holds only numbers, booleans and empty
    cells."""
    dtype = column.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return True
    if pd.api.types.is_numeric_dtype(dtype):
        return not pd.api.types.is_complex_dtype(dtype)
    # pandas reads a CSV column of True / False with empty cells as objects, and sktime passes
    # numbers in object columns: both convert to floats
    return dtype == object and pd.api.types.infer_dtype(column, skipna=True) in (
        "boolean", "empty", "integer", "floating", "mixed-integer-float", "decimal")


def non_numeric_columns(frame: pd.DataFrame | pd.Series) -> list[str]:
    """The columns of ``frame`` that do not hold numbers, each as ``"'name' (dtype)"``.

    Booleans count as numbers (0 / 1); see the module's rules.
    """
    if isinstance(frame, pd.Series):
        frame = frame.to_frame()
    return [f"{str(name)!r} ({frame[name].dtype})" for name in frame.columns
            if not _is_numeric(frame[name])]


def check_numeric_columns(frame: pd.DataFrame | pd.Series, where: str,
                          fix: str = NUMERIC_FIX) -> None:
    """Raise :class:`~reinpatch_forecast.errors.NonNumericColumnsError` if a column of ``frame``
    does not hold numbers.

    Parameters
    ----------
    frame
        The columns to check (a series is one column).
    where
        What ``frame`` is, for the message: ``"y"``, a file's path, ``"The frame"``.
    fix
        What to do, ending with a full stop.
    """
    bad = non_numeric_columns(frame)
    if bad:
        raise NonNumericColumnsError(
            f"{where} has non-numeric column(s) {', '.join(bad)}. Every column must hold "
            f"numbers (booleans count as 0 / 1): {fix}"
        )


def numeric_values(frame: pd.DataFrame, dtype: Any = np.float64) -> np.ndarray:
    """The values of the numeric columns of ``frame`` as floats ``(T, C)``: booleans become 0 / 1,
    empty cells NaN."""
    return frame.to_numpy(dtype=dtype, na_value=np.nan)


def nonfinite_problem(values: np.ndarray, index: Sequence | None = None,
                      columns: Sequence | None = None, fix: str | None = None,
                      limit: float | None = MAX_ABS_VALUE) -> str | None:
    """Describe the NaN, infinite or too large values of ``values`` ``(T, ...)``; ``None`` if none.

    Parameters
    ----------
    values
        Array whose first axis is time.
    index
        Time labels of the first axis, used to say where the first bad value is.
    columns
        Names of the columns (the second axis; further axes, such as darts' samples, belong to
        their column), used to name the columns that hold bad values.
    fix
        What to do about NaN or infinite values, ending with a full stop; default
        :data:`FINITE_FIX`.
    limit
        Largest magnitude allowed; ``None`` allows any finite value.

    Returns
    -------
    str or None
        ``"contains 2 NaN values in column(s) 'a' (first at 2020-01-03). <fix>"``, or the
        too-large counterpart.
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
    if np.isfinite(largest) and (limit is None or largest <= limit):
        return None
    finite = np.isfinite(rows)
    bad = ~finite if not finite.all() else np.abs(rows) > limit
    first = int(np.flatnonzero(bad.any(axis=1))[0])
    label = index[first] if index is not None else first
    named = ""
    if columns is not None and len(columns) and rows.shape[1] % len(columns) == 0:
        per_column = bad.reshape(len(rows), len(columns), -1).any(axis=(0, 2))
        named = f" in column(s) {_quoted(c for c, b in zip(columns, per_column) if b)}"
    if finite.all():
        return (
            f"has values up to {largest:.3g} in magnitude{named} (first at {label}), beyond "
            f"{limit:.0e}: the network computes in float32 and squares deviations of the "
            f"series, which would overflow. {LARGE_FIX}"
        )
    n_nan = int(np.isnan(rows).sum())
    n_inf = int(np.isinf(rows).sum())
    kinds = " and ".join(
        part for part in (f"{n_nan} NaN" if n_nan else "", f"{n_inf} infinite" if n_inf else "")
        if part
    )
    return (f"contains {kinds} value{'s' if n_nan + n_inf > 1 else ''}{named} (first at "
            f"{label}). {FINITE_FIX if fix is None else fix}")


def check_finite_values(values: np.ndarray, name: str, index: Sequence | None = None,
                        columns: Sequence | None = None, fix: str | None = None,
                        limit: float | None = MAX_ABS_VALUE) -> None:
    """Raise a ``ValueError`` if ``values`` has NaN, infinite or too large entries.

    The message is ``f"{name} {nonfinite_problem(...)}"``; see :func:`nonfinite_problem` for
    the parameters.
    """
    problem = nonfinite_problem(values, index, columns, fix, limit)
    if problem is not None:
        raise ReinPatchInputError(f"{name} {problem}")


def check_darts_series(series: Any, argument: str, min_length: int, purpose: str,
                       tail: int | None = None, fix: str = "") -> None:
    """Check darts series: every one long enough, and finite.

    Parameters
    ----------
    series
        A ``TimeSeries`` (anything with ``all_values``), a sequence of them, or ``None``
        (nothing to check).
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
    single = hasattr(series, "all_values")
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
        check_finite_values(values, name, index, columns=list(s.components))


def pad_future_covariates(values: np.ndarray, length: int | None = None) -> np.ndarray:
    """Future covariates ``(T, F)`` over every step up to ``length``: a step not given (a row of
    NaN, or a row after the last) takes the last known values before it.

    The network needs future covariates at every step up to the last one of its horizon, but a
    forecast's step reads only the covariates of its own step: the steps a caller does not give
    are steps whose forecast is not returned, so their values do not change the forecast.

    Parameters
    ----------
    values
        The covariates, the first row known (the last step of the history).
    length
        Rows of the result; default ``len(values)``.

    Returns
    -------
    numpy.ndarray
        Shape ``(max(T, length), F)``, the dtype of ``values``.
    """
    rows = np.asarray(values)
    missing = 0 if length is None else max(0, length - len(rows))
    if missing:
        rows = np.concatenate([rows, np.full((missing, rows.shape[1]), np.nan, rows.dtype)])
    given = ~np.isnan(rows).all(axis=1)
    if len(rows) and not given[0]:
        raise ReinPatchInputError("pad_future_covariates needs the values of the first step.")
    last = np.maximum.accumulate(np.where(given, np.arange(len(rows)), 0))
    return rows[last]


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


def check_trained(trained: bool, before: str) -> None:
    """Raise a ``ValueError`` saying how to get a trained model, unless ``trained``.

    Parameters
    ----------
    trained
        Whether the model has weights (it was fitted or loaded).
    before
        The call that needs them, e.g. ``"predict()"``.
    """
    if not trained:
        raise ReinPatchInputError(
            f"This ReinPatchModel is not trained yet: call fit() before {before}, or load a "
            "trained model with ReinPatchModel.load(path), load_weights(path) or "
            "ReinPatchModel.load_from_checkpoint(model_name)."
        )
