"""Checkpoint files that a killed process never leaves half-written.

Lightning's ``TorchCheckpointIO`` (``lightning_fabric.utilities.cloud_io._atomic_save``) writes
a checkpoint into a temporary file of the *system* temporary folder (fsspec's transaction,
``tempfile.mkstemp()``) and then ``shutil.move``s it into place. That is a rename only when the
temporary folder and the checkpoint folder share a file system; otherwise (``/tmp`` on tmpfs,
a work dir on another disk or a network share: common on desktops and clusters) the move copies
the bytes into the final name, and a process killed during the copy leaves a truncated
``last-epoch=N.ckpt`` that darts' ``load_from_checkpoint(best=False)`` picks as the newest.
A kill also leaves the whole temporary file behind in the system temporary folder.

:class:`AtomicCheckpointIO` writes the temporary file beside the checkpoint instead, so the
final step is always an ``os.replace`` (atomic on POSIX and Windows): a checkpoint name holds
either the previous complete file or the new complete one.

A process killed during a write leaves its hidden temporary file behind.
:func:`remove_abandoned_writes` deletes those whose writer is gone; the model's loaders call it
on the folder they read from (through :func:`checked_load`, which also names a missing,
truncated or corrupted file before darts reads it), and the plugin on the checkpoint folder
before each write.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import torch
from fsspec.implementations.local import LocalFileSystem
from lightning_fabric.utilities.cloud_io import get_filesystem

from ..checks import check_saved_file, load_error
from ..errors import ReinPatchFileNotFoundError, ReinPatchInputError
from ._darts_api import DartsCheckpointIO

__all__ = ["AtomicCheckpointIO", "TEMPORARY_SUFFIX", "remove_abandoned_writes", "checked_load"]

Loaded = TypeVar("Loaded")

logger = logging.getLogger(__name__)

#: Suffix of a checkpoint being written; a process killed while writing leaves such a file.
TEMPORARY_SUFFIX = ".partial"

#: A temporary file of another machine (a shared folder) counts as abandoned after this long
#: untouched: its writer's process cannot be looked up from here.
ABANDONED_AFTER_SECONDS = 24 * 3600

#: This machine in a temporary file's name (no dots, so that the name parses back).
_HOST = re.sub(r"[^A-Za-z0-9-]", "_", socket.gethostname()) or "host"

#: ``.<checkpoint name>.<host>.<pid>-<8 hex digits>.partial``
_TEMPORARY_NAME = re.compile(
    rf"^\..+\.(?P<host>[A-Za-z0-9_-]+)\.(?P<pid>\d+)-[0-9a-f]{{8}}{re.escape(TEMPORARY_SUFFIX)}$"
)


def temporary_path(path: str) -> str:
    """The hidden file beside ``path`` that a write of ``path`` goes to first."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(
        folder, f".{name}.{_HOST}.{os.getpid()}-{uuid.uuid4().hex[:8]}{TEMPORARY_SUFFIX}")


def _process_running(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":  # on Windows os.kill would end the process
        return True
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _abandoned(path: str) -> bool:
    """Whether the temporary file ``path`` belongs to a write that will never finish: its
    process on this machine is gone, or (another machine's, or an unknown name) it has been
    untouched for :data:`ABANDONED_AFTER_SECONDS`."""
    match = _TEMPORARY_NAME.match(os.path.basename(path))
    if match is not None and match["host"] == _HOST:
        return not _process_running(int(match["pid"]))
    return time.time() - os.path.getmtime(path) > ABANDONED_AFTER_SECONDS


def remove_abandoned_writes(folder: str) -> list[str]:
    """Delete the temporary files that killed checkpoint writes left in ``folder``.

    Writes still running (their process is alive) keep their files. Returns the paths removed
    (each logged at INFO level); a missing ``folder`` removes nothing.
    """
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    removed = []
    for name in names:
        if not (name.startswith(".") and name.endswith(TEMPORARY_SUFFIX)):
            continue
        path = os.path.join(folder, name)
        try:
            if _abandoned(path):
                os.remove(path)
                removed.append(path)
        except FileNotFoundError:  # removed meanwhile by another process
            continue
    for path in removed:
        logger.info("Removed %s, left by a checkpoint write that was killed.", path)
    return removed


class AtomicCheckpointIO(DartsCheckpointIO):
    """darts' checkpoint plugin (safe loading) with atomic local writes.

    A checkpoint is written to a hidden ``.<name>.<host>.<pid>-<random>.partial`` file in its own
    folder (hidden, so darts' ``last-*`` / ``best-*`` globs never see it), flushed to disk, and
    renamed onto its name with ``os.replace``. Remote paths (``s3://...``) keep Lightning's
    writer.
    """

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options=None) -> None:
        """Write ``checkpoint`` to ``path`` atomically (see the class notes)."""
        if storage_options is not None or not isinstance(get_filesystem(path), LocalFileSystem):
            super().save_checkpoint(checkpoint, path, storage_options)
            return
        path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        remove_abandoned_writes(folder)
        temporary = temporary_path(path)
        try:
            with open(temporary, "wb") as file:
                torch.save(checkpoint, file)
                file.flush()
                # on disk before the rename, so a power cut cannot leave the new name empty
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.remove(temporary)
            raise


def checked_load(load: Callable[[], Loaded], files: Sequence[tuple[str, str]], missing: str,
                 expected: type | None = None, loader: str = "load") -> Loaded:
    """``load()``, once the files it reads are checked, with errors that name the file.

    Parameters
    ----------
    load
        Reads the files (darts' ``load``, ``load_weights`` or ``load_from_checkpoint``).
    files
        ``(path, what)`` of each file ``load`` reads, ``what`` naming it in messages: the
        first must exist (else ``ReinPatchFileNotFoundError(missing)``), the others are
        checked when they exist. The temporary files of killed writes beside the first are
        removed.
    missing
        The message for a missing first file.
    expected
        The class the loaded model must be an instance of (``None``: no check); ``loader``
        names the method the message tells to load it with instead.

    Raises
    ------
    FileNotFoundError
        If the first file does not exist.
    ValueError
        If a file is truncated or corrupted, or holds another model than ``expected``.
    """
    path = files[0][0]
    if not os.path.exists(path):
        raise ReinPatchFileNotFoundError(missing)
    for file, what in files:
        if file == path or os.path.exists(file):
            check_saved_file(file, what)
    remove_abandoned_writes(os.path.dirname(os.path.abspath(path)))
    with _explained_load_errors(path):
        loaded = load()
    if expected is not None and not isinstance(loaded, expected):
        name = type(loaded).__name__
        raise ReinPatchInputError(
            f"{path!r} holds a {name}, not a {expected.__name__}: load it with {name}.{loader}."
        )
    return loaded


@contextlib.contextmanager
def _explained_load_errors(path: str) -> Iterator[None]:
    """Turn a low-level error of reading the intact file ``path`` into :func:`load_error`'s.

    A missing file, a ``ValueError`` and darts' own errors (an unregistered class, parameters
    that do not match) already say what to do, and pass unchanged.
    """
    try:
        yield
    except FileNotFoundError:
        raise
    except Exception as error:
        if type(error).__module__.startswith("darts") or isinstance(error, ValueError):
            raise
        raise load_error(path, error) from error
