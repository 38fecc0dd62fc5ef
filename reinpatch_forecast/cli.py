"""The ``reinpatch-forecast`` command line.

Subcommands
-----------
demo
    The README's main job (``reinpatch_forecast.demo``): ReinPatch against uniform patches and a
    seasonal naive baseline on the bundled ETTh1, plus forecast, segmentation and boundary
    statistics figures written to ``--out``.
fit
    Train a :class:`~reinpatch_forecast.darts.ReinPatchModel` on columns of any CSV file with a
    date column, optionally with other columns as past or future covariates, and save it
    (darts ``save``: ``MODEL`` and ``MODEL.ckpt``).
predict
    Forecast the rows after the end of a CSV file with a saved model; write a CSV. With future
    covariates the file ends with their known future: rows whose target cells are empty.
segment
    Plot where a saved model's patcher cuts the last window of a CSV file.
pretrain-patcher
    Pretrain a foundation patcher (``reinpatch_forecast.foundation.pretrain_patcher``) on the
    default corpus (``reinpatch_forecast.corpus``) and save it; the command that reproduces the
    patcher shipped in ``reinpatch_forecast/pretrained/``.

Every subcommand has ``--help``. Errors print one line on stderr: exit code 2 for bad
arguments, 1 for a failure at run time (a missing or unreadable file, a missing column, a
series too short, ...).

darts, torch and matplotlib are imported only when a subcommand runs, so ``--help`` is quick.

Over 500 lines for a reason: one command line, whose five subcommands share its CSV reading,
argument types and one-line errors; the model's own flags come from
:mod:`~reinpatch_forecast.options`.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
import pandas as pd

from ._lightning import quiet_lightning
from .nn.policies import DEFAULT_POLICY, POLICY_NAMES
from .options import add_option_flags, option_names

if TYPE_CHECKING:  # pragma: no cover
    from darts import TimeSeries

    from .darts import ReinPatchModel

__all__ = ["main", "build_parser", "CLIError"]

PROG = "reinpatch-forecast"


class CLIError(Exception):
    """A failure at run time with a message meant for the user (exit code 1)."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit code 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


# --------------------------------------------------------------------------------------------
# Argument types
# --------------------------------------------------------------------------------------------


def _number(text: str, cast: Callable[[str], float], valid: Callable[[float], bool],
            expected: str) -> Any:
    """``cast(text)`` if it is finite and ``valid``, else an ``argparse`` usage error."""
    try:
        value = cast(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not np.isfinite(value) or not valid(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    return _number(text, int, lambda v: v >= 1, "a positive integer")


def _positive_float(text: str) -> float:
    return _number(text, float, lambda v: v > 0, "a positive number")


def _non_negative_int(text: str) -> int:
    return _number(text, int, lambda v: v >= 0, "an integer >= 0")


def _non_negative_float(text: str) -> float:
    return _number(text, float, lambda v: v >= 0, "a number >= 0")


def _probability(text: str) -> float:
    return _number(text, float, lambda v: 0 <= v < 1, "a number in [0, 1)")


def _rates(text: str) -> float | tuple[float, float]:
    """A compression rate ``R``, or a pair ``R1,R2`` for two levels."""
    values = tuple(_positive_float(part) for part in text.split(","))
    if len(values) > 2:
        raise argparse.ArgumentTypeError(f"expected R or R1,R2, got {text!r}")
    return values[0] if len(values) == 1 else values


#: The argument type of each model option's flag (the others are strings).
_OPTION_TYPES = {
    "compression_rate": _rates, "levels": int, "d_model": _positive_int,
    "n_heads": _positive_int, "n_layers": _positive_int, "dropout": _probability,
    "resample_points": _positive_int, "group_size": _positive_int,
    "kl_coef": _non_negative_float, "sample_loss_weight": _non_negative_float,
    "patcher_warmup": _non_negative_int,
    "patcher_lr": _positive_float,
}


def _columns(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated column names such as 'OT' or 'HUFL,OT', got {text!r}"
        )
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"a column is named twice in {text!r}")
    return names


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _one_line(error: BaseException) -> str:
    """An exception's message on one line."""
    text = " ".join(str(error).split())
    if isinstance(error, KeyError):
        return f"missing key {text}"
    return text or type(error).__name__


def _quiet_lightning():
    """Lightning and darts loggers at ERROR, benign warnings hidden, for one command."""
    return quiet_lightning(logging.ERROR, extra_loggers=("darts",))


def _trainer_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "accelerator": getattr(args, "accelerator", "cpu"),
        "enable_progress_bar": not args.quiet,
        "enable_model_summary": False,
        "logger": False,
    }


@dataclass
class _CSVData:
    """A CSV file read for a model: the target series and the covariate columns beside it.

    ``series`` holds the target columns up to the last row with target values; ``table`` (with
    covariates only) holds every covariate column over every row, the rows after the target's
    end included: those rows, with empty target cells, are the known future. Covariate values
    are checked (:func:`_covariate_rows`) only over the rows a command needs.
    """

    path: str
    series: "TimeSeries"
    table: "TimeSeries | None" = None

    @property
    def end(self) -> int:
        """Rows of the target series (the row after its last one)."""
        return len(self.series)


def _names(columns: Sequence[str]) -> str:
    return ", ".join(map(repr, columns))


def _read_csv(path_text: str, date_column: str, targets: Sequence[str] | None,
              freq: str | None, covariates: dict[str, Sequence[str]] | None = None,
              future_rows: bool = False) -> _CSVData:
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
        raise CLIError(f"cannot read {path_text} as CSV: {_one_line(error)}") from None
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
            f"column(s) {_names(missing)} not in {path_text} (columns: {', '.join(columns)})"
        )
    for label, cols in covariates.items():
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise CLIError(f"{label} {_names(missing)} not in {path_text} "
                           f"(columns: {', '.join(columns)})")
    if len(frame) == 0:
        raise CLIError(f"{path_text} has a header but no rows")
    try:
        dates = pd.DatetimeIndex(pd.to_datetime(frame[date_column]))
    except (ValueError, TypeError) as error:
        raise CLIError(
            f"cannot parse the dates in column {date_column!r} of {path_text}: {_one_line(error)}"
        ) from None
    if dates.hasnans:
        raise CLIError(f"column {date_column!r} of {path_text} has empty dates")
    if not dates.is_monotonic_increasing or dates.has_duplicates:
        raise CLIError(f"the dates in {path_text} must be strictly increasing")
    extra = [c for cols in covariates.values() for c in cols]
    non_numeric = [c for c in [*targets, *extra] if not pd.api.types.is_numeric_dtype(frame[c])
                   or pd.api.types.is_bool_dtype(frame[c])]
    if non_numeric:
        raise CLIError(f"column(s) {_names(non_numeric)} of {path_text} are not numeric")
    values = frame[targets].to_numpy(dtype=np.float32)  # (T, C)
    end = len(values)
    if covariates or future_rows:
        # trailing rows whose target cells are all empty are the known future of covariates
        filled = np.flatnonzero(~np.isnan(values).all(axis=1))
        if len(filled) == 0:
            raise CLIError(f"{path_text} has no values in the target columns {_names(targets)}")
        end = int(filled[-1]) + 1
    if not np.isfinite(values[:end]).all():
        bad = int((~np.isfinite(values[:end])).sum())
        raise CLIError(f"{path_text} has {bad} empty or non-finite value(s) in the target columns")
    table = None
    try:
        series = TimeSeries.from_times_and_values(dates[:end], values[:end], columns=targets,
                                                  freq=freq)
        if extra:
            table = TimeSeries.from_times_and_values(
                dates, frame[extra].to_numpy(dtype=np.float32), columns=extra,
                freq=freq or series.freq_str,
            )
    except ValueError as error:
        hint = "" if freq else " (if the dates are irregular, give their frequency with --freq)"
        raise CLIError(f"cannot make a time series of {path_text}: {_one_line(error)}{hint}") \
            from None
    return _CSVData(path_text, series, table)


def _covariate_rows(data: _CSVData, kind: str, columns: Sequence[str], start: int, stop: int,
                    purpose: str, hint: str = "") -> "TimeSeries":
    """The ``kind`` covariate ``columns`` of ``data`` over rows ``start:stop``; every value
    there must be given (``stop`` may pass the target's end: the known future rows)."""
    rows = len(data.table)
    if stop > rows:
        after = data.series.end_time()
        raise CLIError(
            f"{purpose} needs the {kind} covariates ({_names(columns)}) in the {stop - data.end} "
            f"row(s) after the last target row ({after}), but {data.path} has "
            f"{rows - data.end}: add rows with their dates and {kind} covariates, the target "
            f"cells empty{hint}"
        )
    part = data.table[list(columns)][start:stop]
    bad = ~np.isfinite(part.values(copy=False))
    if bad.any():
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        names = [c for c, b in zip(columns, bad.any(axis=0)) if b]
        future = " (a row of known future)" if start + row >= data.end else ""
        raise CLIError(
            f"{kind} covariate column(s) {_names(names)} of {data.path} have {int(bad.sum())} "
            f"empty or non-finite value(s) in the rows {purpose} needs ({part.start_time()} to "
            f"{part.end_time()}), the first at {part.time_index[row]}{future}"
            f"{hint if future else ''}"
        )
    return part


def _load_model(path_text: str, args: argparse.Namespace) -> "ReinPatchModel":
    """Load a model saved by ``fit`` (darts ``ReinPatchModel.save``)."""
    from .darts import ReinPatchModel

    path = Path(path_text)
    if not path.is_file():
        raise CLIError(f"no such file: {path_text}")
    try:
        with _quiet_lightning():
            model = ReinPatchModel.load(str(path), pl_trainer_kwargs=_trainer_kwargs(args),
                                        map_location="cpu")
    except Exception as error:  # darts and torch raise many types for a bad file
        raise CLIError(
            f"cannot load a ReinPatchModel from {path_text}: it is not a model saved by "
            f"'{PROG} fit' or it is damaged ({type(error).__name__}: {_one_line(error)})"
        ) from None
    if not isinstance(model, ReinPatchModel):
        raise CLIError(f"{path_text} holds a {type(model).__name__}, not a ReinPatchModel")
    if model.model is None:
        raise CLIError(f"{path_text} has no trained weights: {path_text}.ckpt is missing")
    return model


def _model_targets(model: "ReinPatchModel", args: argparse.Namespace) -> list[str]:
    """The columns a saved model forecasts: ``--target``, else its training columns."""
    if getattr(args, "target", None):
        return list(args.target)
    series = model.training_series
    if series is None:
        raise CLIError("the model does not record its training columns: name them with --target")
    return [str(c) for c in series.components]


def _check_overlap(targets: Sequence[str], kinds: dict[str, Sequence[str] | None]) -> None:
    """Refuse a column named as a target and a covariate, or as both kinds of covariate."""
    past, future = (list(kinds.get(kind) or ()) for kind in ("past", "future"))
    both = [c for c in past if c in future]
    if both:
        raise CLIError(f"column(s) {_names(both)} named both as past and as future covariates")
    both = [c for c in [*past, *future] if c in targets]
    if both:
        raise CLIError(f"column(s) {_names(both)} named both as a target and as a covariate")


def _covariates_text(kinds: dict[str, Sequence[str] | None]) -> str:
    """``" with past covariates a and future covariates b"``, or ``""``."""
    parts = [f"{kind} covariates {', '.join(cols)}" for kind, cols in kinds.items() if cols]
    return f", with {' and '.join(parts)}" if parts else ""


def _model_covariates(model: "ReinPatchModel", kind: str,
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
        raise CLIError(f"the model was trained with the {kind} covariates {_names(columns)}, "
                       f"not {_names(given)}: give {flag} {','.join(columns)} (or omit it)")
    return columns


def _check_length(series: "TimeSeries", needed: int, path_text: str, what: str) -> None:
    if len(series) < needed:
        raise CLIError(f"the series in {path_text} has {len(series)} rows; {what} needs at "
                       f"least {needed}")


def _output_path(path_text: str) -> Path:
    """Check an output file name early (before any training); folders are made on writing."""
    path = Path(path_text)
    if path.is_dir():
        raise CLIError(f"{path_text} is a folder; give a file name")
    return path


def _make_parent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CLIError(f"cannot create the folder of {path}: {_one_line(error)}") from None


def _save_figure(figure, path: Path) -> None:
    _make_parent(path)
    try:
        figure.savefig(path, dpi=110)
    except (OSError, ValueError) as error:
        raise CLIError(f"cannot write {path}: {_one_line(error)}") from None


# --------------------------------------------------------------------------------------------
# Subcommands
# --------------------------------------------------------------------------------------------


def _cmd_demo(args: argparse.Namespace) -> int:
    """``reinpatch-forecast demo``: the demo's table, then figures of its learned model."""
    from darts import TimeSeries

    from .datasets import load_bundled_etth1, prepare_ltsf
    from .demo import run_demo
    from .plotting import plot_boundary_statistics, plot_forecast, plot_segmentation

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CLIError(f"--out {args.out} is a file; give a folder")
    out.mkdir(parents=True, exist_ok=True)

    with _quiet_lightning():
        results = run_demo(args.lookback, args.horizon, args.epochs, args.max_windows,
                           args.seed, verbose=not args.quiet)
    print(f"\nETTh1, lookback {args.lookback}, horizon {args.horizon}: validation split, "
          "every horizon-th window, scaled data")
    print(f"{'model':<22}{'MSE':>8}{'MAE':>8}{'time (s)':>10}")
    for r in results:
        print(f"{r.name:<22}{r.mse:>8.4f}{r.mae:>8.4f}{r.seconds:>10.1f}")

    # The figures show the model the table scored (run_demo returns it), not a retrained one.
    learned = next(r.model for r in results if r.patcher == "learned")
    splits = prepare_ltsf(load_bundled_etth1(), "ETTh", args.lookback, args.horizon)
    val = TimeSeries.from_times_and_values(
        splits.dates["val"], splits.val, columns=list(splits.columns), freq="h"
    )
    context, actual = val[:-args.horizon], val[-args.horizon:]
    with _quiet_lightning():
        forecast = learned.predict(args.horizon, series=context, verbose=False)
        last = learned.patch_boundaries(context)
        cutoffs = np.unique(np.linspace(args.lookback, len(val), 64).astype(int))
        windows = learned.patch_boundaries([val[:int(t)] for t in cutoffs])

    paths = {
        "forecast": out / "forecast.png",
        "segmentation": out / "segmentation.png",
        "boundary statistics": out / "boundary_statistics.png",
    }
    _save_figure(plot_forecast(context, forecast, actual=actual, max_history=args.lookback,
                               title="ReinPatch (learned patcher) on the last ETTh1 validation "
                                     "window (scaled)"), paths["forecast"])
    _save_figure(plot_segmentation(last, title="Learned patches of the last ETTh1 validation "
                                               "input window (scaled)"), paths["segmentation"])
    _save_figure(plot_boundary_statistics(
        windows, title=f"Learned boundaries over {len(windows)} ETTh1 validation windows x "
                       f"{val.width} channels"), paths["boundary statistics"])
    print()
    for name, path in paths.items():
        print(f"wrote {name}: {path}")
    return 0


def _cmd_fit(args: argparse.Namespace) -> int:
    from .darts import ReinPatchModel

    kinds = {"past": args.past_covariates, "future": args.future_covariates}
    _check_overlap(args.target, kinds)
    data = _read_csv(args.csv, args.date_column, args.target, args.freq,
                     {f"--{kind}-covariates column(s)": cols for kind, cols in kinds.items()})
    series = data.series
    _check_length(series, args.lookback + args.horizon, args.csv,
                  f"fit with --lookback {args.lookback} and --horizon {args.horizon}")
    covariates = {
        f"{kind}_covariates": _covariate_rows(data, kind, cols, 0, data.end, "fit")
        for kind, cols in kinds.items() if cols
    }
    out = _output_path(args.out)
    model = ReinPatchModel(
        input_chunk_length=args.lookback,
        output_chunk_length=args.horizon,
        **{name: getattr(args, name) for name in option_names()},
        batch_size=args.batch_size,
        n_epochs=args.epochs,
        optimizer_kwargs={"lr": args.learning_rate},
        random_state=args.seed,
        pl_trainer_kwargs=_trainer_kwargs(args),
    )
    began = time.perf_counter()
    with _quiet_lightning():
        model.fit(series, **covariates, verbose=not args.quiet)
    seconds = time.perf_counter() - began
    _make_parent(out)
    try:
        model.save(str(out))
    except OSError as error:
        raise CLIError(f"cannot write the model to {args.out}: {_one_line(error)}") from None
    config = model.model.network.config
    policy = f" ({config.policy} policy)" if config.patcher == "learned" else ""
    print(f"trained on {len(series)} rows x {series.width} column(s) "
          f"({', '.join(series.components)}) in {seconds:.1f} s: {args.patcher} patcher"
          f"{policy}, {config.n_patches} patches per window of {args.lookback}"
          f"{_covariates_text(kinds)}")
    print(f"saved the model to {out} (and {out}.ckpt)")
    return 0


def _cmd_pretrain_patcher(args: argparse.Namespace) -> int:
    import torch

    from .corpus import default_corpus
    from .foundation import file_sha256, pretrain_patcher, save_patcher

    out = _output_path(args.out)
    if args.data_dir is not None and not Path(args.data_dir).is_dir():
        raise CLIError(f"--data-dir {args.data_dir} is not a folder (it should hold the LTSF "
                       "CSVs, e.g. ETTh1.csv.gz); omit it to leave the LTSF series out.")
    if args.threads:
        torch.set_num_threads(args.threads)
    corpus = default_corpus(args.data_dir, random_state=args.seed)
    print(f"corpus: {len(corpus)} series, {sum(len(v) for v in corpus.values())} steps"
          + ("" if args.data_dir else " (no LTSF training splits: --data-dir not given)"))
    began = time.perf_counter()
    with _quiet_lightning():
        result = pretrain_patcher(
            corpus, input_chunk_length=args.lookback, output_chunk_length=args.horizon,
            compression_rate=args.compression_rate, group_size=args.group_size,
            n_epochs=args.epochs, max_windows_per_series=args.max_windows,
            kl_coef=args.kl_coef, policy=args.policy, random_state=args.seed,
            verbose=not args.quiet,
        )
    seconds = time.perf_counter() - began
    for epoch in result.history:
        print(f"epoch {epoch.epoch}: reward {epoch.reward:.4f}, val MSE {epoch.val_mse:.4f}")
    _make_parent(out)
    try:
        save_patcher(result.patcher, out)
    except OSError as error:
        raise CLIError(f"cannot write the patcher to {args.out}: {_one_line(error)}") from None
    print(f"pretrained on {result.n_train_windows} windows per epoch in {seconds:.0f} s")
    print(f"saved the patcher to {out} (SHA-256 {file_sha256(out)})")
    return 0


def _model_and_data(args: argparse.Namespace, covariates: bool = True):
    """The saved model, its target and covariate columns, and the CSV file read for it (with
    enough rows for the model's lookback); ``covariates=False`` reads only the targets."""
    model = _load_model(args.model, args)
    targets = _model_targets(model, args)
    kinds = {kind: _model_covariates(model, kind, getattr(args, f"{kind}_covariates", None))
             for kind in ("past", "future")}
    _check_overlap(targets, kinds)
    labels = {kind: f"--{kind}-covariates column(s)" if getattr(args, f"{kind}_covariates", None)
              else f"the model's {kind} covariate column(s)" for kind in kinds}
    data = _read_csv(args.csv, args.date_column, targets, args.freq,
                     {labels[kind]: cols for kind, cols in kinds.items() if cols and covariates},
                     future_rows=any(kinds.values()))
    _check_length(data.series, model.input_chunk_length, args.csv,
                  f"the model (lookback {model.input_chunk_length})")
    return model, targets, kinds, data


def _cmd_predict(args: argparse.Namespace) -> int:
    from .plotting import plot_forecast

    model, targets, kinds, data = _model_and_data(args)
    series = data.series
    lookback, horizon = model.input_chunk_length, model.output_chunk_length
    n = args.n if args.n is not None else horizon
    purpose = f"the forecast of {n} step(s)"
    covariates = {}
    if kinds["past"]:
        # beyond the horizon, darts feeds forecasts back in and reads n - H future past values
        covariates["past_covariates"] = _covariate_rows(
            data, "past", kinds["past"], data.end - lookback, data.end + max(0, n - horizon),
            purpose, hint=f", or forecast at most the model's horizon (--n {horizon})",
        )
    if kinds["future"]:
        future = _covariate_rows(data, "future", kinds["future"], data.end - lookback,
                                 data.end + n, purpose)
        if n < horizon:
            # darts wants the future covariates of a whole horizon; step i of the forecast reads
            # only those of step i, so repeating the last row fills steps that are not returned
            last = future.values()[-1:]
            future = future.append_values(np.repeat(last, horizon - n, axis=0))
        covariates["future_covariates"] = future
    out = _output_path(args.out)
    with _quiet_lightning():
        forecast = model.predict(n, series=series, **covariates, verbose=False)
    frame = pd.DataFrame(forecast.values(copy=False), columns=list(forecast.components))
    frame.insert(0, args.date_column, forecast.time_index)
    _make_parent(out)
    try:
        frame.to_csv(out, index=False)
    except OSError as error:
        raise CLIError(f"cannot write {args.out}: {_one_line(error)}") from None
    print(f"wrote {n} forecast step(s) of {', '.join(targets)} from "
          f"{forecast.start_time()} to {forecast.end_time()}{_covariates_text(kinds)}: {out}")
    if args.plot:
        plot_path = _output_path(args.plot)
        _save_figure(plot_forecast(series, forecast, max_history=4 * model.input_chunk_length),
                     plot_path)
        print(f"wrote the forecast plot: {plot_path}")
    return 0


def _cmd_segment(args: argparse.Namespace) -> int:
    from .plotting import plot_segmentation

    model, targets, _, data = _model_and_data(args, covariates=False)
    series = data.series
    out = _output_path(args.out)
    with _quiet_lightning():
        boundaries = model.patch_boundaries(series)
    _save_figure(plot_segmentation(boundaries), out)
    for name, row in zip(boundaries.components, boundaries.starts):
        print(f"{name}: patches start at {row.tolist()}")
    print(f"wrote the segmentation plot of the last {model.input_chunk_length} rows: {out}")
    return 0


# --------------------------------------------------------------------------------------------
# Parser and entry point
# --------------------------------------------------------------------------------------------


def _add_csv_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--date-column", default="date", metavar="NAME",
                        help="the CSV column with the dates (default: %(default)s)")
    parser.add_argument("--freq", default=None, metavar="FREQ",
                        help="pandas frequency of the dates, such as 'h' or 'D' (default: "
                             "inferred from the dates)")


def _add_covariate_options(parser: argparse.ArgumentParser, predict: bool) -> None:
    default = " (default: the model's)" if predict else ""
    parser.add_argument(
        "--past-covariates", type=_columns, default=None, metavar="COLS",
        help="comma-separated columns known up to the present only, such as a measured "
             f"driver: read over the lookback, averaged over each patch{default}",
    )
    parser.add_argument(
        "--future-covariates", type=_columns, default=None, metavar="COLS",
        help="comma-separated columns known in advance, such as a calendar or planned "
             "events: read over the lookback and the forecast steps; for predict, the CSV "
             "ends with rows of these values whose target cells are empty (the known future)"
             f"{default}",
    )


def _add_quiet(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``reinpatch-forecast`` (one subparser per subcommand)."""
    parser = _Parser(
        prog=PROG,
        description="ReinPatch forecasting (learned variable-size patches + a Transformer) "
                    "from the command line.",
        epilog=f"Run '{PROG} COMMAND --help' for the options of a command.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = commands.add_parser(
        "demo", help="ReinPatch vs uniform patches vs seasonal naive on ETTh1, with figures",
        description="Train ReinPatch (learned patcher) and the same network with uniform "
                    "patches on the ETTh1 training split shipped with the package, print MSE "
                    "and MAE on the validation split against a seasonal naive baseline, and "
                    "write forecast.png, segmentation.png and boundary_statistics.png to --out.",
    )
    demo.add_argument("--out", default="reinpatch-demo", metavar="DIR",
                      help="folder for the figures (default: %(default)s)")
    demo.add_argument("--lookback", type=_positive_int, default=96, metavar="L",
                      help="lookback window (default: %(default)s)")
    demo.add_argument("--horizon", type=_positive_int, default=24, metavar="H",
                      help="forecast horizon (default: %(default)s)")
    demo.add_argument("--epochs", type=_positive_int, default=4,
                      help="training epochs (default: %(default)s)")
    demo.add_argument("--max-windows", type=_positive_int, default=2048, metavar="N",
                      help="most recent training windows used per epoch (default: %(default)s)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    _add_quiet(demo)
    demo.set_defaults(handler=_cmd_demo)

    fit = commands.add_parser(
        "fit", help="train a model on columns of a CSV file and save it",
        description="Train a ReinPatchModel on the --target columns of a CSV file (every "
                    "column is patched as its own series; values are cast to float32), "
                    "optionally with other columns of the file as past or future covariates "
                    "(used at the scale given), and save it with darts' save: MODEL and "
                    "MODEL.ckpt.",
        epilog=f"example: {PROG} fit --csv data.csv --target OT --lookback 96 --horizon 24 "
               "--out model.pt",
    )
    fit.add_argument("--csv", required=True, metavar="FILE", help="training data (CSV)")
    fit.add_argument("--target", required=True, type=_columns, metavar="COLS",
                     help="comma-separated columns to forecast, such as 'OT' or 'HUFL,OT'")
    fit.add_argument("--lookback", required=True, type=_positive_int, metavar="L",
                     help="input window length")
    fit.add_argument("--horizon", required=True, type=_positive_int, metavar="H",
                     help="steps forecast in one pass")
    fit.add_argument("--out", required=True, metavar="MODEL", help="file to save the model to")
    _add_covariate_options(fit, predict=False)
    fit.add_argument("--epochs", type=_positive_int, default=10,
                     help="training epochs (default: %(default)s)")
    # The model's options (reinpatch_forecast.options): the flags, defaults and help of every
    # one, as the darts model and the sktime forecaster take them.
    add_option_flags(fit, _OPTION_TYPES)
    fit.add_argument("--batch-size", type=_positive_int, default=32,
                     help="training windows per batch (default: %(default)s)")
    fit.add_argument("--learning-rate", type=_positive_float, default=1e-3, metavar="LR",
                     help="learning rate of the backbone (default: %(default)s)")
    fit.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    fit.add_argument("--accelerator", default="cpu",
                     help="Lightning accelerator: cpu, gpu, auto, ... (default: %(default)s)")
    _add_csv_options(fit)
    _add_quiet(fit)
    fit.set_defaults(handler=_cmd_fit)

    predict = commands.add_parser(
        "predict", help="forecast after the end of a CSV file with a saved model",
        description="Forecast the --n steps after the last row of a CSV file with a model "
                    "saved by 'fit' and write them as a CSV file: the date column and one "
                    "column per target. A model trained with covariates reads the same "
                    "columns; with future covariates the file ends with at least --n rows "
                    "whose target cells are empty and whose future covariates are filled, and "
                    "the forecast starts at the first of them.",
        epilog=f"example: {PROG} predict --model model.pt --csv data.csv --out forecast.csv",
    )
    predict.add_argument("--model", required=True, metavar="MODEL", help="a model saved by fit")
    predict.add_argument("--csv", required=True, metavar="FILE",
                         help="the history to forecast from (CSV, at least L rows)")
    predict.add_argument("--out", required=True, metavar="FILE", help="forecast CSV to write")
    predict.add_argument("--n", type=_positive_int, default=None,
                         help="steps to forecast (default: the model's horizon)")
    predict.add_argument("--target", type=_columns, default=None, metavar="COLS",
                         help="columns to forecast (default: the model's training columns)")
    _add_covariate_options(predict, predict=True)
    predict.add_argument("--plot", default=None, metavar="PNG",
                         help="also write a plot of the history and the forecast")
    _add_csv_options(predict)
    _add_quiet(predict)
    predict.set_defaults(handler=_cmd_predict, accelerator="cpu")

    segment = commands.add_parser(
        "segment", help="plot the patches of the last window of a CSV file",
        description="Plot where the saved model's patcher cuts the last L rows of a CSV file "
                    "(one panel per target column) and print the patch starts.",
        epilog=f"example: {PROG} segment --model model.pt --csv data.csv --out patches.png",
    )
    segment.add_argument("--model", required=True, metavar="MODEL", help="a model saved by fit")
    segment.add_argument("--csv", required=True, metavar="FILE",
                         help="the series (CSV, at least L rows)")
    segment.add_argument("--out", required=True, metavar="PNG", help="plot to write")
    segment.add_argument("--target", type=_columns, default=None, metavar="COLS",
                         help="columns to segment (default: the model's training columns)")
    _add_csv_options(segment)
    _add_quiet(segment)
    segment.set_defaults(handler=_cmd_segment, accelerator="cpu")

    pretrain = commands.add_parser(
        "pretrain-patcher", help="pretrain a foundation patcher on the default corpus",
        description="Pretrain a standalone patcher by GRPG on the default corpus (series "
                    "bundled with sktime and statsmodels, synthetic series, and with "
                    "--data-dir the training splits of the LTSF files) and save it; use it "
                    "with ReinPatchModel(patcher=FILE) or fit --patcher FILE.",
        epilog=f"example: {PROG} pretrain-patcher --data-dir shared/data --out patcher.pt",
    )
    pretrain.add_argument("--out", required=True, metavar="FILE", help="patcher file to write")
    pretrain.add_argument("--data-dir", default=None, metavar="DIR",
                          help="folder of the LTSF CSVs; only their training splits are used "
                               "(default: leave them out)")
    pretrain.add_argument("--lookback", type=_positive_int, default=64, metavar="L",
                          help="lookback of the pretraining task (default: %(default)s)")
    pretrain.add_argument("--horizon", type=_positive_int, default=16, metavar="H",
                          help="horizon of the pretraining task (default: %(default)s)")
    pretrain.add_argument("--compression-rate", type=_positive_float, default=8.0, metavar="R",
                          help="average patch length (default: %(default)s)")
    pretrain.add_argument("--policy", choices=POLICY_NAMES, default=DEFAULT_POLICY,
                          help="boundary policy of the patcher (default: %(default)s)")
    pretrain.add_argument("--group-size", type=_positive_int, default=4, metavar="G",
                          help="GRPG group size (default: %(default)s)")
    pretrain.add_argument("--kl-coef", type=_non_negative_float, default=0.1, metavar="W",
                          help="weight of the KL anchor to the uniform grid (default: "
                               "%(default)s)")
    pretrain.add_argument("--epochs", type=_positive_int, default=10,
                          help="epochs (default: %(default)s)")
    pretrain.add_argument("--max-windows", type=_positive_int, default=256, metavar="N",
                          help="most recent training windows per series (default: %(default)s)")
    pretrain.add_argument("--threads", type=_positive_int, default=None,
                          help="torch CPU threads (default: torch's choice)")
    pretrain.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    _add_quiet(pretrain)
    pretrain.set_defaults(handler=_cmd_pretrain_patcher)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``reinpatch-forecast``; returns the exit code.

    Parameters
    ----------
    argv
        The arguments after the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        0 on success, 2 for bad arguments, 1 for a failure at run time (with one line on
        stderr saying what went wrong), 130 when interrupted.
    """
    from .validation import TrainingDivergedError

    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except SystemExit as exit_:  # --help, --version and usage errors
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return int(handler(args) or 0)
    except CLIError as error:
        message = _one_line(error)
    except (FileNotFoundError, ValueError, KeyError, pd.errors.ParserError,
            pd.errors.EmptyDataError, UnicodeDecodeError, OSError,
            TrainingDivergedError) as error:
        message = _one_line(error)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
