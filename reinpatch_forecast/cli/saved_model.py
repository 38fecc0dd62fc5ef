"""A model saved by ``fit``: loading it, and the columns it forecasts and reads."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ._common import PROG, CLIError, one_line, quiet, trainer_kwargs
from .csv_input import quoted, read_csv

if TYPE_CHECKING:  # pragma: no cover
    from darts import TimeSeries

    from ..darts import ReinPatchModel


def load_model(path_text: str, args: argparse.Namespace) -> "ReinPatchModel":
    """Load a model saved by ``fit`` (darts ``ReinPatchModel.save``)."""
    from ..darts import ReinPatchModel

    path = Path(path_text)
    if not path.is_file():
        raise CLIError(f"no such file: {path_text}")
    try:
        with quiet():
            model = ReinPatchModel.load(str(path), pl_trainer_kwargs=trainer_kwargs(args),
                                        map_location="cpu")
    except Exception as error:  # darts and torch raise many types for a bad file
        raise CLIError(
            f"cannot load a ReinPatchModel from {path_text}: it is not a model saved by "
            f"'{PROG} fit' or it is damaged ({type(error).__name__}: {one_line(error)})"
        ) from None
    if not isinstance(model, ReinPatchModel):
        raise CLIError(f"{path_text} holds a {type(model).__name__}, not a ReinPatchModel")
    if model.model is None:
        raise CLIError(f"{path_text} has no trained weights: {path_text}.ckpt is missing")
    return model


def model_targets(model: "ReinPatchModel", args: argparse.Namespace) -> list[str]:
    """The columns a saved model forecasts: ``--target``, else its training columns."""
    if getattr(args, "target", None):
        return list(args.target)
    series = model.training_series
    if series is None:
        raise CLIError("the model does not record its training columns: name them with --target")
    return [str(c) for c in series.components]


def check_overlap(targets: Sequence[str], kinds: dict[str, Sequence[str] | None]) -> None:
    """Refuse a column named as a target and a covariate, or as both kinds of covariate."""
    past, future = (list(kinds.get(kind) or ()) for kind in ("past", "future"))
    both = [c for c in past if c in future]
    if both:
        raise CLIError(f"column(s) {quoted(both)} named both as past and as future covariates")
    both = [c for c in [*past, *future] if c in targets]
    if both:
        raise CLIError(f"column(s) {quoted(both)} named both as a target and as a covariate")


def covariates_text(kinds: dict[str, Sequence[str] | None]) -> str:
    """``" with past covariates a and future covariates b"``, or ``""``."""
    parts = [f"{kind} covariates {', '.join(cols)}" for kind, cols in kinds.items() if cols]
    return f", with {' and '.join(parts)}" if parts else ""


def model_covariates(model: "ReinPatchModel", kind: str,
                     given: Sequence[str] | None) -> list[str] | None:
    """The ``kind`` covariate columns for a saved model: those it was trained with (the
    default), checked against ``--{kind}-covariates``; ``None`` when it uses none."""
    flag = f"--{kind}-covariates"
    used = model.uses_past_covariates if kind == "past" else model.uses_future_covariates
    if not used:
        if given:
            raise CLIError(f"the model was trained without {kind} covariates: drop {flag} (or "
                           f"fit a model with {flag})")
        return None
    trained = getattr(model, f"{kind}_covariate_series")
    if trained is None:  # trained on several series from Python: darts keeps no columns
        if not given:
            raise CLIError(f"the model was trained with {kind} covariates but does not record "
                           f"their columns: name them with {flag}")
        return list(given)
    columns = [str(c) for c in trained.components]
    if given and list(given) != columns:
        raise CLIError(f"the model was trained with the {kind} covariates {quoted(columns)}, "
                       f"not {quoted(given)}: give {flag} {','.join(columns)} (or omit it)")
    return columns


def check_length(series: "TimeSeries", needed: int, path_text: str, what: str) -> None:
    if len(series) < needed:
        raise CLIError(f"the series in {path_text} has {len(series)} rows; {what} needs at "
                       f"least {needed}")


def model_and_data(args: argparse.Namespace, covariates: bool = True):
    """The saved model, its target and covariate columns, and the CSV file read for it (with
    enough rows for the model's lookback); ``covariates=False`` reads only the targets."""
    model = load_model(args.model, args)
    targets = model_targets(model, args)
    kinds = {kind: model_covariates(model, kind, getattr(args, f"{kind}_covariates", None))
             for kind in ("past", "future")}
    check_overlap(targets, kinds)
    labels = {kind: f"--{kind}-covariates column(s)" if getattr(args, f"{kind}_covariates", None)
              else f"the model's {kind} covariate column(s)" for kind in kinds}
    data = read_csv(args.csv, args.date_column, targets, args.freq,
                    {labels[kind]: cols for kind, cols in kinds.items() if cols and covariates},
                    future_rows=any(kinds.values()))
    check_length(data.series, model.input_chunk_length, args.csv,
                 f"the model (lookback {model.input_chunk_length})")
    return model, targets, kinds, data
