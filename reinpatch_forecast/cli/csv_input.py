"""Reading a CSV file for a model: the target series and the covariate columns beside it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..checks import check_finite_values, check_numeric_columns, numeric_values
from ._common import CLIError, one_line

if TYPE_CHECKING:  # pragma: no cover
    from darts import TimeSeries


@dataclass
class CSVData:
    """A CSV file read for a model: the target series and the covariate columns beside it.

    ``series`` holds the target columns up to the last row with target values; ``table`` (with
    covariates only) holds every covariate column over every row, the rows after the target's
    end included: those rows, with empty target cells, are the known future. Covariate values
    are checked (:func:`covariate_rows`) only over the rows a command needs.
    """

    path: str
    series: "TimeSeries"
    table: "TimeSeries | None" = None

    @property
    def end(self) -> int:
        """Rows of the target series (the row after its last one)."""
        return len(self.series)


def quoted(columns: Sequence[str]) -> str:
    return ", ".join(map(repr, columns))


def read_csv(path_text: str, date_column: str, targets: Sequence[str] | None,
             freq: str | None, covariates: dict[str, Sequence[str]] | None = None,
             future_rows: bool = False) -> CSVData:
    """Read a CSV file: a float32 darts ``TimeSeries`` of the ``targets`` columns, and the
    ``covariates`` columns (``{what they are, in messages: columns}``) over every row.

    ``targets=None`` takes every column except the date column. With covariates (or
    ``future_rows``), the file may end with rows whose target cells are all empty: the target
    series ends before them, and they hold the covariates' known future.
    """
    from darts import TimeSeries

    covariates = {label: list(cols) for label, cols in (covariates or {}).items() if cols}
    path = Path(path_text)
    if not path.exists():
        raise CLIError(f"no such file: {path_text}")
    if path.is_dir():
        raise CLIError(f"{path_text} is a folder, not a CSV file")
    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise CLIError(f"{path_text} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError) as error:
        raise CLIError(f"cannot read {path_text} as CSV: {one_line(error)}") from None
    columns = [str(c) for c in frame.columns]
    if date_column not in frame.columns:
        raise CLIError(
            f"{path_text} has no date column {date_column!r} (columns: {', '.join(columns)}); "
            "name it with --date-column"
        )
    if targets is None:
        covariate_columns = {c for cols in covariates.values() for c in cols}
        targets = [c for c in columns if c != date_column and c not in covariate_columns]
        if not targets:
            raise CLIError(f"{path_text} has no column besides the date column {date_column!r}")
    targets = list(targets)
    missing = [t for t in targets if t not in frame.columns]
    if missing:
        raise CLIError(
            f"column(s) {quoted(missing)} not in {path_text} (columns: {', '.join(columns)})"
        )
    for label, cols in covariates.items():
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise CLIError(f"{label} {quoted(missing)} not in {path_text} "
                           f"(columns: {', '.join(columns)})")
    if len(frame) == 0:
        raise CLIError(f"{path_text} has a header but no rows")
    try:
        dates = pd.DatetimeIndex(pd.to_datetime(frame[date_column]))
    except (ValueError, TypeError) as error:
        raise CLIError(
            f"cannot parse the dates in column {date_column!r} of {path_text}: {one_line(error)}"
        ) from None
    if dates.hasnans:
        raise CLIError(f"column {date_column!r} of {path_text} has empty dates")
    if not dates.is_monotonic_increasing or dates.has_duplicates:
        raise CLIError(f"the dates in {path_text} must be strictly increasing")
    extra = [c for cols in covariates.values() for c in cols]
    check_numeric_columns(frame[list(dict.fromkeys([*targets, *extra]))], path_text,
                          fix="convert them to numbers, or leave them out (name the target "
                          "columns with --target).")
    values = numeric_values(frame[targets])  # (T, C) float64: checked before the float32 cast
    end = len(values)
    if covariates or future_rows:
        # trailing rows whose target cells are all empty are the known future of covariates
        filled = np.flatnonzero(~np.isnan(values).all(axis=1))
        if len(filled) == 0:
            raise CLIError(f"{path_text} has no values in the target columns {quoted(targets)}")
        end = int(filled[-1]) + 1
    check_finite_values(values[:end], path_text, dates[:end], columns=targets,
                        fix="Fill the empty cells of the target columns and replace "
                        "infinite values.")
    table = None
    try:
        series = TimeSeries.from_times_and_values(
            dates[:end], values[:end].astype(np.float32), columns=targets, freq=freq)
        if extra:
            table = TimeSeries.from_times_and_values(
                dates, numeric_values(frame[extra], np.float32), columns=extra,
                freq=freq or series.freq_str,
            )
    except ValueError as error:
        hint = "" if freq else " (if the dates are irregular, give their frequency with --freq)"
        raise CLIError(f"cannot make a time series of {path_text}: {one_line(error)}{hint}") \
            from None
    return CSVData(path_text, series, table)


def covariate_rows(data: CSVData, kind: str, columns: Sequence[str], start: int, stop: int,
                   purpose: str, hint: str = "") -> "TimeSeries":
    """The ``kind`` covariate ``columns`` of ``data`` over rows ``start:stop``; every value
    there must be given and finite (``stop`` may pass the target's end: the known future rows).
    """
    rows = len(data.table)
    if stop > rows:
        after = data.series.end_time()
        raise CLIError(
            f"{purpose} needs the {kind} covariates ({quoted(columns)}) in the {stop - data.end} "
            f"row(s) after the last target row ({after}), but {data.path} has "
            f"{rows - data.end}: add rows with their dates and {kind} covariates, the target "
            f"cells empty{hint}"
        )
    part = data.table[list(columns)][start:stop]
    values = part.values(copy=False)  # (stop - start, F)
    bad = ~np.isfinite(values).all(axis=1)
    future = bool(bad.any()) and start + int(np.flatnonzero(bad)[0]) >= data.end
    check_finite_values(
        values, f"The {kind} covariates of {data.path} over the rows {purpose} needs "
        f"({part.start_time()} to {part.end_time()})", part.time_index, columns=columns,
        fix="Fill the empty cells and replace infinite values"
        + (f" in the rows of known future (after the last target row){hint}." if future else "."),
    )
    return part
