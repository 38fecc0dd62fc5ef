"""Quiet Lightning: trainer settings without progress bar, logger or summary, and a context
that hides its start-up banner, its tip and known benign warnings and log records."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["quiet_lightning", "quiet_trainer_kwargs"]

_LIGHTNING_LOGGERS = ("pytorch_lightning", "lightning.pytorch", "lightning_fabric", "lightning")

# Warnings that darts' own data loaders trigger and that say nothing about the user's model.
_BENIGN_WARNINGS = (
    r".*LeafSpec.*is deprecated.*",
    r"Total length of .* across ranks is zero.*",
    r".*'pin_memory' argument is set as true but no accelerator is found.*",
    r".*does not have many workers which may be a bottleneck.*",
)


#: Log records of other libraries that say nothing about the user's model: the logger's name
#: and the start of the message. torch's ONNX exporter reports each torchvision operator it
#: cannot register (torchvision is not a dependency).
_BENIGN_RECORDS = (
    ("torch.onnx._internal.exporter._registration", "torchvision is not installed"),
)


class _DropRecords(logging.Filter):
    """Drop the records whose message starts with ``prefix``."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefix)


def quiet_trainer_kwargs(progress: bool = False, **overrides: Any) -> dict[str, Any]:
    """Lightning ``Trainer`` arguments for a silent CPU run, with ``overrides`` on top.

    The one place the package, its benchmarks and its tests spell "train quietly on the CPU":
    no model summary, no logger, a progress bar only with ``progress``.

    Examples
    --------
    >>> quiet_trainer_kwargs(accelerator="gpu")["accelerator"]
    'gpu'
    """
    return {"accelerator": "cpu", "enable_progress_bar": progress, "enable_model_summary": False,
            "logger": False, **overrides}


@contextmanager
def quiet_lightning(level: int = logging.WARNING,
                    extra_loggers: tuple[str, ...] = ()) -> Iterator[None]:
    """Raise Lightning's loggers (and ``extra_loggers``) to ``level``, ignore benign warnings
    and drop benign log records of other libraries.

    Lightning's start-up lines ("GPU available: ...") and its litlogger tip are INFO records,
    hidden at the default ``level``. Everything is restored on exit; warnings that are not on
    the benign list still show, and progress bars (written to the terminal, not logged) too.
    """
    loggers = [logging.getLogger(name) for name in _LIGHTNING_LOGGERS + extra_loggers]
    levels = [logger.level for logger in loggers]
    filters = [(logging.getLogger(name), _DropRecords(prefix)) for name, prefix in _BENIGN_RECORDS]
    for logger in loggers:
        logger.setLevel(max(logger.level, level))
    for logger, record_filter in filters:
        logger.addFilter(record_filter)
    try:
        with warnings.catch_warnings():
            for message in _BENIGN_WARNINGS:
                warnings.filterwarnings("ignore", message=message)
            yield
    finally:
        for logger, saved in zip(loggers, levels):
            logger.setLevel(saved)
        for logger, record_filter in filters:
            logger.removeFilter(record_filter)
