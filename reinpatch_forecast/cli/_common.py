"""What every subcommand shares: the program name, its error type, one-line messages, quiet
Lightning and the checks of an output path."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from .._lightning import quiet_lightning, quiet_trainer_kwargs
from ..errors import ReinPatchError


PROG = "reinpatch-forecast"


class CLIError(ReinPatchError):
    """A failure at run time with a message meant for the user (exit code 1): a file that
    cannot be read or written, a missing column, a series too short for the model."""


def one_line(error: BaseException) -> str:
    """An exception's message on one line."""
    text = " ".join(str(error).split())
    if isinstance(error, KeyError):
        return f"missing key {text}"
    return text or type(error).__name__


def quiet():
    """Lightning's and darts' loggers at ERROR for one command (their start-up lines and
    notices hidden; warnings still show)."""
    return quiet_lightning(logging.ERROR, extra_loggers=("darts",))


def trainer_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The package's quiet trainer, with a progress bar unless ``--quiet``."""
    return quiet_trainer_kwargs(progress=not args.quiet,
                                accelerator=getattr(args, "accelerator", "cpu"))


def output_path(path_text: str) -> Path:
    """Check an output file name early (before any training); folders are made on writing."""
    path = Path(path_text)
    if path.is_dir():
        raise CLIError(f"{path_text} is a folder; give a file name")
    return path


def make_parent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CLIError(f"cannot create the folder of {path}: {one_line(error)}") from None


def save_figure(figure, path: Path) -> None:
    make_parent(path)
    try:
        figure.savefig(path, dpi=110)
    except (OSError, ValueError) as error:
        raise CLIError(f"cannot write {path}: {one_line(error)}") from None
