"""Shared helpers of the nn tests: tiny patchers and networks of the package."""

from __future__ import annotations

import math

import torch
from hypothesis import settings

from reinpatch_forecast.nn.network import ReinPatchConfig, ReinPatchNetwork
from reinpatch_forecast.nn.patchers import LearnedPatcher, make_patcher

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None)


#: Every patcher of the package.
ALL_PATCHERS = ("learned", "uniform", "random", "volatility")


def small_learned(levels: int = 1, scored: bool = False, **kwargs) -> LearnedPatcher:
    """A seeded learned patcher small enough for exhaustive checks.

    ``scored``: random (not zero) score heads, so the policy is away from its reference.
    """
    torch.manual_seed(0)
    patcher = LearnedPatcher(hidden_size=8, n_layers=2, levels=levels, **kwargs)
    if scored:
        # Own generator: the fine head gets the same weights at one and two levels.
        generator = torch.Generator().manual_seed(1)
        for head in (patcher.output, getattr(patcher, "coarse_output", None)):
            if head is not None:
                with torch.no_grad():
                    head.weight.copy_(torch.randn(head.weight.shape, generator=generator))
                    head.bias.copy_(0.5 * torch.randn(head.bias.shape, generator=generator))
    return patcher


def make(name: str, levels: int = 1):
    """The patcher ``name`` of :data:`ALL_PATCHERS` (learned ones small, seeded and scored)
    with ``levels`` levels."""
    if name == "learned":
        return small_learned(levels, scored=True)
    return make_patcher(name, levels=levels)


def small_config(**overrides) -> ReinPatchConfig:
    """A small network configuration: L = 32, N = 8 patches of mean length 4, G = 4.

    ``overrides`` are flat keywords (``d_model``, ``patcher_hidden_size``, ``group_size``,
    ...), nested as :class:`ReinPatchConfig` takes them.
    """
    values = dict(
        input_length=32, output_length=6, n_channels=2, compression_rate=4, group_size=4,
        d_model=16, n_heads=2, n_layers=1, patcher_hidden_size=8, patcher_layers=2,
        resample_points=4,
    )
    values.update(overrides)
    backbone = {name: values.pop(name) for name in BACKBONE_FIELDS if name in values}
    patcher = {name: values.pop(flat) for flat, name in PATCHER_FIELDS.items() if flat in values}
    patcher.update(values.pop("patcher_options", None) or {})
    if isinstance(values.get("patcher"), str):
        patcher["name"] = values.pop("patcher")
    training = {name: values.pop(name) for name in ("group_size", "kl_coef", "scored_share")
                if name in values}
    return ReinPatchConfig(**values, backbone=backbone, patcher=patcher, training=training)


#: Flat keywords of :func:`small_config` that go to the backbone's sizes.
BACKBONE_FIELDS = ("d_model", "n_heads", "n_layers", "ff_multiplier", "dropout",
                   "resample_points", "step_width")
#: Flat keywords of :func:`small_config` -> the learned patcher's sizes.
PATCHER_FIELDS = {"patcher_hidden_size": "hidden_size", "patcher_layers": "n_layers",
                  "patcher_kernel_size": "kernel_size"}


def small_network(seed: int = 0, **overrides) -> ReinPatchNetwork:
    """A seeded :class:`ReinPatchNetwork` of :func:`small_config`."""
    torch.manual_seed(seed)
    return ReinPatchNetwork(small_config(**overrides))


def _rate(length: int, count: int) -> float:
    """A compression rate that gives exactly ``count`` patches of ``length`` steps."""
    rate = length / count
    while math.ceil(length / rate) > count:
        rate = math.nextafter(rate, math.inf)
    return rate


def small_backbone(input_length: int, output_length: int, n_patches: int,
                   n_coarse_patches: int | None = None, budget: str = "exact", **flat):
    """A backbone of ``n_patches`` (and ``n_coarse_patches``) tokens from flat keywords (the
    sizes of :func:`small_config`)."""
    from reinpatch_forecast.nn import Backbone

    rate = _rate(input_length, n_patches)
    levels = 1
    if n_coarse_patches is not None:
        rate, levels = (rate, _rate(n_patches, n_coarse_patches)), 2
    config = small_config(input_length=input_length, output_length=output_length,
                          compression_rate=rate, levels=levels, budget=budget,
                          **{"d_model": 64, "n_heads": 4, "n_layers": 2, "resample_points": 8,
                             **flat})
    return Backbone(config)
