"""Standalone patchers: save, load and hand a trained patcher to another model.

A patcher is stored as a plain state (format name, version, a JSON-able config and a tensor
state dict), written with ``torch.save`` and read with ``torch.load(weights_only=True)``, so
loading never unpickles arbitrary objects.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from .nn import LearnedPatcher

__all__ = ["PATCHER_FORMAT", "PATCHER_VERSION", "patcher_state", "patcher_from_state",
           "save_patcher", "load_patcher"]

PATCHER_FORMAT = "reinpatch-forecast/patcher"
PATCHER_VERSION = 1


def patcher_state(patcher: LearnedPatcher) -> dict[str, Any]:
    """The plain state of a learned patcher (tensors and primitives only)."""
    if not isinstance(patcher, LearnedPatcher):
        raise TypeError(
            f"Only a LearnedPatcher can be saved or reused, got {type(patcher).__name__}."
        )
    return {
        "format": PATCHER_FORMAT,
        "version": PATCHER_VERSION,
        "config": {
            "hidden_size": patcher.hidden_size,
            "n_layers": patcher.n_layers,
            "kernel_size": patcher.kernel_size,
            "uniform_prior": patcher.uniform_prior,
        },
        "state_dict": {k: v.detach().cpu().clone() for k, v in patcher.state_dict().items()},
    }


def patcher_from_state(state: dict[str, Any], source: str = "the patcher state") -> LearnedPatcher:
    """Rebuild a :class:`LearnedPatcher` from :func:`patcher_state`'s output.

    Raises
    ------
    ValueError
        If the state is not a patcher of a supported format and version, or its weights do not
        fit its config.
    """
    if not isinstance(state, dict) or state.get("format") != PATCHER_FORMAT:
        raise ValueError(
            f"{source} is not a reinpatch-forecast patcher (expected format "
            f"{PATCHER_FORMAT!r}). Save patchers with reinpatch_forecast.foundation.save_patcher."
        )
    if state.get("version") != PATCHER_VERSION:
        raise ValueError(
            f"{source} has patcher format version {state.get('version')!r}; this version of "
            f"reinpatch-forecast reads version {PATCHER_VERSION}. Re-save it with a matching "
            "version of the package."
        )
    try:
        patcher = LearnedPatcher(**state["config"])
        patcher.load_state_dict(state["state_dict"])
    except (KeyError, TypeError, RuntimeError) as error:
        raise ValueError(f"{source} is damaged: its weights do not fit its config ({error}).")
    return patcher


def save_patcher(patcher: LearnedPatcher, path: str | os.PathLike) -> None:
    """Write a learned patcher to ``path``."""
    torch.save(patcher_state(patcher), path)


def load_patcher(path: str | os.PathLike) -> LearnedPatcher:
    """Read a patcher written by :func:`save_patcher`.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is truncated, corrupted, or not a patcher of this format and version.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No patcher file at {path!r}.")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises several types for a bad file
        raise ValueError(
            f"Cannot read the patcher file {path!r}: it is truncated, corrupted or not a "
            f"patcher saved by reinpatch-forecast ({type(error).__name__}: {error})."
        ) from error
    return patcher_from_state(state, source=f"The file {path!r}")
