"""Reading a dataset's CSV file into a float frame indexed by its dates.

The reader never looks for data in a fixed place: pass ``data_dir`` or set the environment
variable ``REINPATCH_DATA_DIR``. The package ships one file, ETTh1 (:func:`load_bundled_etth1`).
"""

from __future__ import annotations

import importlib.resources
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..checks import check_finite_values, check_numeric_columns, numeric_values
from ..errors import ReinPatchFileNotFoundError, ReinPatchInputError
from .catalog import DATA_DIR_ENV_VAR


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
            raise ReinPatchFileNotFoundError(f"LTSF CSV file not found: {str(path)!r}.")
        return path

    name = str(name_or_path)
    if data_dir is None:
        env_value = os.environ.get(DATA_DIR_ENV_VAR)
        if not env_value:
            raise ReinPatchFileNotFoundError(
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
        raise ReinPatchFileNotFoundError(
            f"Data folder {str(folder)!r} (from {source}) does not exist."
        )
    candidates = [folder / f"{name}.csv.gz", folder / f"{name}.csv"]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise ReinPatchFileNotFoundError(
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
        integer and boolean flags such as ``vic_elec``'s ``holiday`` become 0.0 / 1.0). The
        index is the parsed ``date`` column (a ``DatetimeIndex`` named ``"date"``); it is kept
        as read, so repeated timestamps and gaps (``weather``) remain, since the protocol slices
        by row.
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
        No ``date`` column, unparsable dates, no data column, a non-numeric column (also a
        ``TypeError``), or an empty / NaN / infinite cell.
    """
    path = _resolve_csv(name_or_path, data_dir)
    frame = pd.read_csv(path, encoding="utf-8")
    if "date" not in frame.columns:
        raise ReinPatchInputError(
            f"{str(path)!r} has no 'date' column; an LTSF CSV needs one (columns found: "
            f"{list(frame.columns)[:10]})."
        )
    try:
        # utc=True: dates with an offset ('...Z', vic_elec) become UTC; naive dates keep their
        # wall-clock values once the zone is dropped again below.
        dates = pd.to_datetime(frame.pop("date"), utc=True)
    except (ValueError, TypeError) as exc:
        raise ReinPatchInputError(
            f"Could not parse the 'date' column of {str(path)!r}: {exc}"
        ) from exc
    if dates.isna().any():
        first = int(np.flatnonzero(dates.isna().to_numpy())[0])
        raise ReinPatchInputError(f"{str(path)!r}: empty 'date' cell at data row {first}.")
    if frame.shape[1] == 0:
        raise ReinPatchInputError(f"{str(path)!r} has no data column besides 'date'.")

    check_numeric_columns(frame, repr(str(path)))
    values = numeric_values(frame)  # (n_rows, C)
    index = pd.DatetimeIndex(dates, name="date").tz_localize(None)
    # the splits are standardised with train statistics: large values are fine, no limit
    check_finite_values(values, repr(str(path)), index, columns=frame.columns, limit=None,
                        fix="Fill or drop the empty cells: every row of an LTSF file must be "
                        "complete.")

    return pd.DataFrame(values, index=index, columns=frame.columns)


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
    resource = importlib.resources.files("reinpatch_forecast.data") / "ETTh1.csv.gz"
    if not resource.is_file():
        raise ReinPatchFileNotFoundError(
            "The bundled ETTh1 copy (reinpatch_forecast/data/ETTh1.csv.gz) is not in this "
            "installation of reinpatch_forecast; reinstall the package with its package data, "
            f"or use load_ltsf_frame('ETTh1', data_dir=...) / the {DATA_DIR_ENV_VAR} "
            "environment variable."
        )
    with importlib.resources.as_file(resource) as path:
        return load_ltsf_frame(Path(path))
