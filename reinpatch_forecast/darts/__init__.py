"""The darts face of ReinPatch."""

from .averaging import WeightEMA
from .model import PatchBoundaries, ReinPatchModel

__all__ = ["ReinPatchModel", "PatchBoundaries", "WeightEMA"]
