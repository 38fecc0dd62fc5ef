"""The darts face of ReinPatch."""

from .model import PatchBoundaries, ReinPatchModel

__all__ = ["ReinPatchModel", "PatchBoundaries"]
