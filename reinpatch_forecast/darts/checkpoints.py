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
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import torch
from darts.utils.serialization.torch import _DartsCheckpointIO
from fsspec.implementations.local import LocalFileSystem
from lightning_fabric.utilities.cloud_io import get_filesystem

__all__ = ["AtomicCheckpointIO", "TEMPORARY_SUFFIX"]

#: Suffix of a checkpoint being written; a process killed while writing leaves such a file.
TEMPORARY_SUFFIX = ".partial"


class AtomicCheckpointIO(_DartsCheckpointIO):
    """darts' checkpoint plugin (safe loading) with atomic local writes.

    A checkpoint is written to a hidden ``.<name>.<pid>-<random>.partial`` file in its own
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
        folder, name = os.path.split(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        temporary = os.path.join(
            folder, f".{name}.{os.getpid()}-{uuid.uuid4().hex[:8]}{TEMPORARY_SUFFIX}"
        )
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
