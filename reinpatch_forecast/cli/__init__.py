"""The ``reinpatch-forecast`` command line.

Subcommands
-----------
demo
    The README's main job (``reinpatch_forecast.cli.demo``): ReinPatch against uniform patches and a
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
    default corpus (``reinpatch_forecast.foundation.corpus``) and save it; the command that
    reproduces the patcher shipped in ``reinpatch_forecast/pretrained/``.

Every subcommand has ``--help``. Errors a user can fix print one line on stderr: exit code 2
for bad arguments, 1 for a failure at run time (a missing or unreadable file, a missing column,
a series too short, ...: every :class:`~reinpatch_forecast.errors.ReinPatchError`). Any other
exception is a bug and shows its traceback.

darts, torch and matplotlib are imported only when a subcommand runs, so ``--help`` is quick.

The package: :mod:`.parser` (arguments), :mod:`.csv_input` (reading a CSV file),
:mod:`.saved_model` (a model saved by ``fit``), :mod:`.commands` (the subcommands),
:mod:`.demo` (the demo's models and scores).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from ..errors import ReinPatchError
from ._common import PROG, CLIError, one_line
from .parser import build_parser

__all__ = ["main", "build_parser", "CLIError"]


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
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except SystemExit as exit_:  # --help, --version and usage errors
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return int(handler(args) or 0)
    except ReinPatchError as error:
        message = one_line(error)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
    return 1
