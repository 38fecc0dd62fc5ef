"""Patcher files: a learned patcher as a plain state, saved, loaded, and the one shipped.

A patcher is stored as a plain state (format name, version, a JSON-able config and a tensor
state dict), written with ``torch.save`` and read with ``torch.load(weights_only=True)``, so
loading never unpickles arbitrary objects. This module sits below the darts face (which stores
a given patcher in the model) and below :mod:`~reinpatch_forecast.foundation` (which trains one
through the darts face).
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
from pathlib import Path
from typing import Any

import torch

from .errors import ReinPatchFileNotFoundError, ReinPatchInputError, ReinPatchTypeError
from .nn import PATCHER_NAMES, LearnedPatcher

__all__ = ["PATCHER_FORMAT", "PATCHER_VERSION", "PRETRAINED_SHA256", "patcher_state",
           "patcher_from_state", "save_patcher", "load_patcher", "pretrained_patcher_path",
           "load_pretrained_patcher", "file_sha256", "resolve_patcher_state"]

#: SHA-256 of the shipped ``pretrained/patcher.pt`` (checked by the test suite).
PRETRAINED_SHA256 = "e87f5b995572fd3ee86756d609401f780fce9012bcccdd68a0aae696b51d395e"

PATCHER_FORMAT = "reinpatch-forecast/patcher"
#: The file format's version; a file of another version is refused with the way to a new one.
PATCHER_VERSION = 2


def patcher_state(patcher: LearnedPatcher) -> dict[str, Any]:
    """The plain state of a learned patcher (tensors and primitives only)."""
    if not isinstance(patcher, LearnedPatcher):
        raise ReinPatchTypeError(
            f"Only a LearnedPatcher can be saved or reused, got {type(patcher).__name__}."
        )
    return {
        "format": PATCHER_FORMAT,
        "version": PATCHER_VERSION,
        # The policy's name makes the file say what it holds; the package reads "density".
        "config": {"policy": patcher.policy_name, **patcher.config()},
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
        raise ReinPatchInputError(
            f"{source} is not a reinpatch-forecast patcher (expected format "
            f"{PATCHER_FORMAT!r}). Save patchers with reinpatch_forecast.patcher_io.save_patcher."
        )
    if state.get("version") != PATCHER_VERSION:
        raise ReinPatchInputError(
            f"{source} has patcher format version {state.get('version')!r}; this version of "
            f"reinpatch-forecast reads version {PATCHER_VERSION}. Pretrain a new patcher with "
            "reinpatch_forecast.foundation.pretrain_patcher (or `reinpatch-forecast "
            "pretrain-patcher`), or use the shipped one (patcher='pretrained')."
        )
    config = dict(state.get("config") or {})
    policy = config.pop("policy", LearnedPatcher.policy_name)
    config.pop("offset_penalty", None)  # a setting of the offset policy, unused by the density one
    if policy != LearnedPatcher.policy_name:
        raise ReinPatchInputError(
            f"{source} holds a patcher of the {policy!r} policy, a benchmark ablation that "
            f"is no longer part of the project; the package's learned patcher uses the "
            f"{LearnedPatcher.policy_name!r} policy. Pretrain a new patcher with "
            "reinpatch_forecast.foundation.pretrain_patcher, or use patcher='pretrained'."
        )
    try:
        patcher = LearnedPatcher(**config)
        patcher.load_state_dict(state["state_dict"])
    except (KeyError, TypeError, RuntimeError) as error:
        raise ReinPatchInputError(
            f"{source} is damaged: its weights do not fit its config ({error})."
        )
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
        raise ReinPatchFileNotFoundError(f"No patcher file at {path!r}.")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises several types for a bad file
        raise ReinPatchInputError(
            f"Cannot read the patcher file {path!r}: it is truncated, corrupted or not a "
            f"patcher saved by reinpatch-forecast ({type(error).__name__}: {error})."
        ) from error
    return patcher_from_state(state, source=f"The file {path!r}")


def pretrained_patcher_path() -> Path:
    """Path of the foundation patcher shipped in the package (``pretrained/patcher.pt``)."""
    return Path(str(importlib.resources.files("reinpatch_forecast") / "pretrained" / "patcher.pt"))


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 hex digest of a file."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_pretrained_patcher() -> LearnedPatcher:
    """The foundation patcher shipped in the package (trainable; freeze it to reuse it frozen).

    Raises
    ------
    ValueError
        If the shipped file does not match :data:`PRETRAINED_SHA256` (a damaged install).
    """
    path = pretrained_patcher_path()
    if not path.is_file():
        raise ReinPatchFileNotFoundError(
            f"The shipped foundation patcher is missing ({path}); reinstall reinpatch-forecast."
        )
    digest = file_sha256(path)
    if digest != PRETRAINED_SHA256:
        raise ReinPatchInputError(
            f"The shipped foundation patcher {path} is damaged (SHA-256 {digest}, expected "
            f"{PRETRAINED_SHA256}); reinstall reinpatch-forecast."
        )
    return load_patcher(path)


def resolve_patcher_state(value: Any, argument: str) -> dict[str, Any]:
    """The plain state of a patcher given as ``"pretrained"``, an object, a state or a path.

    Parameters
    ----------
    value
        ``"pretrained"`` (the shipped patcher), a :class:`~reinpatch_forecast.nn.LearnedPatcher`,
        a state from :func:`patcher_state`, or the path of a file from :func:`save_patcher`.
    argument
        The name of the user's argument (``"patcher"`` or ``"patcher_init"``), for messages.

    Raises
    ------
    ValueError
        If ``value`` is none of these, names no file, or holds a damaged patcher.
    """
    if isinstance(value, LearnedPatcher):
        return patcher_state(value)
    if isinstance(value, dict):
        patcher_from_state(value, source=argument)  # validates
        return value
    if isinstance(value, str) and value == "pretrained":
        return patcher_state(load_pretrained_patcher())
    if isinstance(value, (str, os.PathLike)) and os.path.isfile(value):
        return patcher_state(load_patcher(value))
    names = ", ".join(map(repr, PATCHER_NAMES)) + ", " if argument == "patcher" else ""
    raise ReinPatchInputError(
        f"{argument} must be one of {names}'pretrained', a LearnedPatcher or the path of a "
        f"patcher file saved with reinpatch_forecast.patcher_io.save_patcher; got {value!r}"
        + (" (no such file)." if isinstance(value, (str, os.PathLike)) else ".")
    )
