"""Quiet Lightning without process-wide side effects.

:func:`quiet_trainer_kwargs` turns Lightning's progress bar, model summary and logger off
through the trainer's own arguments. What no trainer argument controls, its start-up lines
("GPU available: ...") and its litlogger tip, are INFO records of Lightning's loggers:
:func:`quiet_lightning` raises the level of those loggers only, for as long as any caller is
inside it, and restores the level exactly when the last caller leaves (a module-level lock
and a count of the callers make it safe for concurrent fits in threads). Nothing here touches
``warnings`` filters or the loggers of other libraries.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = ["lightning_output", "quiet_lightning", "quiet_trainer_kwargs", "shows_progress"]

#: The loggers of the Lightning that darts trains with (``pytorch_lightning``, which logs its
#: start-up lines, and the ``lightning_fabric`` it builds on).
LIGHTNING_LOGGERS = ("pytorch_lightning", "lightning_fabric")


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


def shows_progress(verbose: bool | None, trainer_params: Mapping[str, Any]) -> bool:
    """Whether darts shows Lightning's progress for a call with ``verbose`` on a model with
    these trainer arguments (darts' ``trainer_params``): ``verbose`` when given, unless a
    progress bar callback is set (darts then ignores ``verbose``); otherwise the trainer's
    ``enable_progress_bar``, ``True`` by Lightning's default.

    Examples
    --------
    >>> shows_progress(None, quiet_trainer_kwargs()), shows_progress(True, {})
    (False, True)
    """
    from pytorch_lightning.callbacks import ProgressBar

    if any(isinstance(callback, ProgressBar) for callback in trainer_params.get("callbacks") or []):
        return bool(trainer_params.get("enable_progress_bar", True))
    if verbose is not None:
        return bool(verbose)
    return bool(trainer_params.get("enable_progress_bar", True))


@dataclass
class _Hold:
    """The callers inside :func:`quiet_lightning` for one logger: the level to restore when
    the last one leaves, the level this module set, and the level each caller asked for."""

    restore: int
    applied: int
    requests: list[int] = field(default_factory=list)


# Logger levels are process-wide: every change to them and to _HOLDS happens under _LOCK.
_LOCK = threading.Lock()
_HOLDS: dict[str, _Hold] = {}


def _enter(name: str, level: int) -> None:
    logger = logging.getLogger(name)
    hold = _HOLDS.get(name)
    if hold is None:
        hold = _HOLDS[name] = _Hold(restore=logger.level, applied=logger.level)
    elif logger.level != hold.applied:  # set by someone else meanwhile: theirs is restored
        hold.restore = logger.level
    hold.requests.append(level)
    hold.applied = max(hold.restore, *hold.requests)
    logger.setLevel(hold.applied)


def _leave(name: str, level: int) -> None:
    logger = logging.getLogger(name)
    hold = _HOLDS[name]
    hold.requests.remove(level)
    if logger.level != hold.applied:
        hold.restore = logger.level
    if hold.requests:
        hold.applied = max(hold.restore, *hold.requests)
        logger.setLevel(hold.applied)
    else:
        del _HOLDS[name]
        logger.setLevel(hold.restore)


@contextmanager
def quiet_lightning(level: int = logging.WARNING,
                    extra_loggers: tuple[str, ...] = ()) -> Iterator[None]:
    """Hide records below ``level`` from Lightning's loggers (and ``extra_loggers``) inside
    the block.

    Lightning's start-up lines ("GPU available: ...") and its litlogger tip are INFO records,
    hidden at the default ``level``; its warnings, and every warning raised through
    ``warnings``, still show. A logger whose level is already higher keeps it. The levels are
    restored exactly when the last of the callers that are inside the block at the same time
    (in threads) leaves it; a level someone else sets meanwhile is the one restored. While a
    caller is inside, the level holds for every thread of the process.

    Examples
    --------
    >>> import logging
    >>> with quiet_lightning():
    ...     logging.getLogger("pytorch_lightning").getEffectiveLevel() >= logging.WARNING
    True
    """
    names = tuple(dict.fromkeys(LIGHTNING_LOGGERS + tuple(extra_loggers)))
    with _LOCK:
        for name in names:
            _enter(name, level)
    try:
        yield
    finally:
        with _LOCK:
            for name in names:
                _leave(name, level)


@contextmanager
def lightning_output(verbose: bool | None, trainer_params: Mapping[str, Any]) -> Iterator[None]:
    """Lightning's start-up lines where darts shows its progress (:func:`shows_progress`),
    as with darts' own models; none (:func:`quiet_lightning`) where it does not."""
    if shows_progress(verbose, trainer_params):
        yield
    else:
        with quiet_lightning():
            yield
