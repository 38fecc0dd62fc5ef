"""reinpatch_forecast: ReinPatch (arXiv 2603.26097) for darts and sktime.

``ReinPatchModel`` (darts) and ``ReinPatchForecaster`` (sktime) are imported lazily, so that
``reinpatch_forecast.nn`` works without importing darts or sktime.
"""

from __future__ import annotations

__version__ = "0.1.0.dev0"

__all__ = ["ReinPatchModel", "ReinPatchForecaster", "__version__"]


def __getattr__(name: str):
    if name == "ReinPatchModel":
        from .darts import ReinPatchModel

        return ReinPatchModel
    if name == "ReinPatchForecaster":
        from .sktime import ReinPatchForecaster

        return ReinPatchForecaster
    raise AttributeError(f"module 'reinpatch_forecast' has no attribute {name!r}")
