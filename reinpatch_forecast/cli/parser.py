"""The argument parser: one subparser per subcommand, argument types with one-line errors.

The model's own flags come from :mod:`~reinpatch_forecast.options` (``add_option_flags``), with
the help, metavar and choices of :data:`_OPTION_FLAGS`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from ..options import PATCHER_LR_FACTOR, PRETRAINING, add_option_flags, option_default
from ._common import PROG
from .commands import (fit_command, predict_command, pretrain_patcher_command, run_demo_command,
                       segment_command)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit code 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


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


def _non_negative_float(text: str) -> float:
    return _number(text, float, lambda v: v >= 0, "a number >= 0")


def _probability(text: str) -> float:
    return _number(text, float, lambda v: 0 <= v < 1, "a number in [0, 1)")


def _share(text: str) -> float:
    return _number(text, float, lambda v: 0 < v <= 1, "a number in (0, 1]")


def _decay_or_none(text: str) -> float | None:
    if text.strip().lower() == "none":
        return None
    return _number(text, float, lambda v: 0 < v < 1, "a number in (0, 1) or 'none'")


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
    "resample_points": _positive_int, "step_width": _positive_int,
    "group_size": _positive_int,
    "scored_share": _share,
    "kl_coef": _non_negative_float, "patcher_lr": _positive_float,
    "ema_decay": _decay_or_none,
}

#: The help, metavar and choices of each model option's flag; a flag without help shows the
#: option's documentation (``options.add_option_flags``).
_OPTION_FLAGS: dict[str, dict[str, Any]] = {
    "compression_rate": dict(metavar="R", help="average patch length R: ceil(L / R) patches "
                             "per window; with --levels 2 a pair 'R1,R2'"),
    "levels": dict(choices=(1, 2), help="boundary levels: 1, or 2 for coarse patches nested in "
                   "the fine ones"),
    "patcher": dict(metavar="NAME_OR_FILE", help="learned, uniform, random, volatility, "
                    "pretrained (the foundation patcher shipped in the package, frozen), or the "
                    "file of a saved foundation patcher"),
    "patcher_init": dict(metavar="NAME_OR_FILE", help="with --patcher learned: start from this "
                         "patcher ('pretrained' or a file)"),
    "budget": dict(choices=("exact", "at_most"), help="how the compression rate bounds the "
                   "tokens: exact, or at_most (the learned patcher may use fewer)"),
    "d_model": dict(metavar="D"),
    "dropout": dict(metavar="P"),
    "resample_points": dict(metavar="P", help="points each patch is resampled to (default: "
                            "ceil(R))"),
    "step_width": dict(metavar="K", help="features per time step the head reads (default: "
                       "d_model // P)"),
    "revin_affine": dict(help="learn an affine map in the instance normalisation"),
    "group_size": dict(metavar="G", help="patchings sampled per series in a training step and "
                       "scored against the decoded one"),
    "scored_share": dict(metavar="S", help="share of each training batch's rows (windows x "
                         "components) whose group of patchings is scored"),
    "kl_coef": dict(metavar="W"),
    "ema_decay": dict(metavar="DECAY", help="per-step decay of the weight average that "
                      "validation and prediction use, in (0, 1), or 'none' for the last "
                      "weights (default: %(default)s)"),
    "patcher_lr": dict(metavar="LR", help=f"learning rate of the patcher (default: "
                       f"{PATCHER_LR_FACTOR:g}x the learning rate)"),
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
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = commands.add_parser(
        "demo", help="ReinPatch vs uniform patches vs darts' models on ETTh1, then a spike "
                     "task where boundaries decide, with figures",
        description="Train ReinPatch (learned patcher), the same network with uniform patches "
                    "and darts' TSMixer and DLinear on the ETTh1 training split shipped with "
                    "the package, print MSE, MAE and fit time on the validation split against "
                    "a seasonal naive baseline; then train the learned and the uniform patcher "
                    "on a synthetic spike task, where boundaries decide the forecast. Writes "
                    "forecast.png, segmentation.png, boundary_statistics.png and "
                    "spike_segmentation.png to --out.",
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
    demo.add_argument("--spike-steps", type=_positive_int, default=200, metavar="N",
                      help="training steps of each patcher on the spike task "
                           "(default: %(default)s)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    _add_quiet(demo)
    demo.set_defaults(handler=run_demo_command)

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
    add_option_flags(fit, _OPTION_TYPES, flags=_OPTION_FLAGS)
    fit.add_argument("--batch-size", type=_positive_int, default=32,
                     help="training windows per batch (default: %(default)s)")
    fit.add_argument("--learning-rate", type=_positive_float, default=1e-3, metavar="LR",
                     help="learning rate of the backbone (default: %(default)s)")
    fit.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    fit.add_argument("--accelerator", default="cpu",
                     help="Lightning accelerator: cpu, gpu, auto, ... (default: %(default)s)")
    _add_csv_options(fit)
    _add_quiet(fit)
    fit.set_defaults(handler=fit_command)

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
    predict.set_defaults(handler=predict_command, accelerator="cpu")

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
    segment.set_defaults(handler=segment_command, accelerator="cpu")

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
    pretrain.add_argument("--lookback", type=_positive_int,
                          default=PRETRAINING.input_chunk_length, metavar="L",
                          help="lookback of the pretraining task (default: %(default)s)")
    pretrain.add_argument("--horizon", type=_positive_int,
                          default=PRETRAINING.output_chunk_length, metavar="H",
                          help="horizon of the pretraining task (default: %(default)s)")
    pretrain.add_argument("--compression-rate", type=_positive_float,
                          default=option_default("compression_rate"), metavar="R",
                          help="average patch length (default: %(default)s)")
    pretrain.add_argument("--group-size", type=_positive_int,
                          default=option_default("group_size"), metavar="G",
                          help="GRPG group size (default: %(default)s)")
    pretrain.add_argument("--scored-share", type=_share,
                          default=PRETRAINING.scored_share, metavar="S",
                          help="share of each batch's windows whose group of patchings is "
                               "scored (default: %(default)s)")
    pretrain.add_argument("--kl-coef", type=_non_negative_float,
                          default=option_default("kl_coef"), metavar="W",
                          help="weight of the KL anchor to the uniform grid (default: "
                               "%(default)s)")
    pretrain.add_argument("--decode-margin", type=_non_negative_float,
                          default=PRETRAINING.decode_margin, metavar="M",
                          help="the patcher keeps the grid where its scores stay within M "
                               "exploration scales (default: %(default)s)")
    pretrain.add_argument("--epochs", type=_positive_int, default=PRETRAINING.n_epochs,
                          help="epochs (default: %(default)s)")
    pretrain.add_argument("--max-windows", type=_positive_int,
                          default=PRETRAINING.max_windows_per_series, metavar="N",
                          help="most recent training windows per series (default: %(default)s)")
    pretrain.add_argument("--threads", type=_positive_int, default=None,
                          help="torch CPU threads (default: torch's choice)")
    pretrain.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    _add_quiet(pretrain)
    pretrain.set_defaults(handler=pretrain_patcher_command)
    return parser
