"""Checks of the sktime face's inputs that sktime does not make, or makes without naming the
column, the time point or the fix."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..checks import check_finite_values, check_numeric_columns, numeric_values
from ..errors import ReinPatchInputError

__all__ = ["FINITE_FIX", "check_pandas_input", "check_instances", "check_reach"]


#: What to do about NaN or infinite values in y or X.
FINITE_FIX = (
    "ReinPatchForecaster needs complete, finite series: fill missing values first, e.g. with "
    "sktime's Imputer in a pipeline (Imputer() * ReinPatchForecaster(...)), and replace or clip "
    "infinite ones."
)


def _is_nested(data: pd.Series | pd.DataFrame) -> bool:
    """Whether ``data`` is sktime's nested panel (a series in every cell)."""
    first = data.iloc[:1].to_numpy().ravel()
    return len(first) > 0 and any(isinstance(value, pd.Series) for value in first)


def check_pandas_input(data: Any, name: str) -> None:
    """Check a pandas ``y`` or ``X`` (``name``): numeric columns, no missing values."""
    if not isinstance(data, (pd.Series, pd.DataFrame)) or _is_nested(data):
        return  # sktime converts a nested panel before the inner data reaches the checks
    check_numeric_columns(data, name, fix=f"sktime treats them as categorical: convert them "
                          f"to numbers (e.g. {name}[col] = pd.to_numeric({name}[col])) or drop "
                          f"them ({name}.select_dtypes(['number', 'bool'])).")
    frame = data.to_frame() if isinstance(data, pd.Series) else data
    if frame.isna().to_numpy().any():
        # sktime's own check rejects missing values without naming where; the finite check
        # names them (the too-large limit is the series check's, on the inner data)
        check_finite_values(numeric_values(frame), name, frame.index, columns=frame.columns,
                            fix=FINITE_FIX, limit=None)


def check_reach(steps: int, limit: int, pretrained: bool) -> None:
    """Raise a ValueError if ``fh`` reaches beyond the ``limit`` steps the network (the
    pretrained one, or the fitted one) forecasts."""
    if steps > limit:
        network, given, fix = (
            ("pretrained network", "pretrain", "pretrain a new forecaster") if pretrained
            else ("network", "fit or pretrain", "fit again")
        )
        raise ReinPatchInputError(
            f"fh reaches {steps} steps ahead, but the {network} forecasts {limit} steps (the "
            f"largest fh step given to {given}). Use fh steps up to {limit}, or {fix} with a "
            "longer fh."
        )


def check_instances(instances: Sequence[tuple[tuple, pd.DataFrame]], min_length: int,
                    purpose: str, lookback: int, read_steps: int | None = None) -> None:
    """Raise a ValueError if a series is too short, or has missing or infinite values.

    ``purpose`` names the job, and ``lookback`` the forecaster's ``input_chunk_length``, in
    the message only. With ``read_steps`` only the last
    ``read_steps`` steps (the window a forecast reads) must be finite; by default every step.
    """
    for key, frame in instances:
        name = f"The series {key!r}" if key else "The series"
        if len(frame) < min_length:
            raise ReinPatchInputError(
                f"{name} has {len(frame)} time steps, but {purpose} needs at least "
                f"{min_length}. Pass a longer series, or use a smaller input_chunk_length "
                f"(now {lookback}) or a shorter forecasting horizon."
            )
        window, where = frame, name
        if read_steps is not None:
            window = frame.iloc[-read_steps:]
            where = (f"The last {read_steps} steps of {name[0].lower()}{name[1:]} "
                     "(the window the forecast reads)")
        check_finite_values(numeric_values(window), where, window.index,
                            columns=window.columns, fix=FINITE_FIX)
