"""The sktime face of ReinPatch."""

from .forecaster import ReinPatchForecaster

__all__ = ["ReinPatchForecaster"]
