"""The network variants the benchmarks compare: every ReinPatch model or network a benchmark
builds comes from :func:`make_model` or :func:`make_network`.

The ablations of the method (other policies, readouts, token-part switches, schedule options)
are variants of the network; they live here, beside the experiments that measure them, and
the package holds the method. These two functions accept every ``ReinPatchModel`` /
``ReinPatchConfig`` keyword argument plus the ablation keyword arguments under their names.
"""

from __future__ import annotations

from typing import Any


def make_model(**kwargs: Any):
    """A ``ReinPatchModel`` (a darts ``TorchForecastingModel``) built from ``kwargs``: the
    model's own keyword arguments and the ablation options."""
    from reinpatch_forecast import ReinPatchModel

    return ReinPatchModel(**kwargs)


def make_network(**config_kwargs: Any):
    """A bare ``ReinPatchNetwork`` (pure PyTorch) built from ``ReinPatchConfig`` keyword
    arguments and the ablation options."""
    from reinpatch_forecast.nn import ReinPatchConfig, ReinPatchNetwork

    return ReinPatchNetwork(ReinPatchConfig(**config_kwargs))
