"""Shared helpers of the patcher tests: a float64 Plackett–Luce reference and tiny patchers."""

from __future__ import annotations

import math

import torch
from hypothesis import settings

from reinpatch_forecast.nn.patchers import LearnedPatcher, make_patcher

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None)


def ref_plackett_luce(logits, order):
    """Plackett–Luce log-probability of one ordered draw, in float64, by a plain loop."""
    logits = [float(v) for v in torch.as_tensor(logits).detach().reshape(-1)]
    remaining = list(range(len(logits)))
    total = 0.0
    for a in order:
        biggest = max(logits[m] for m in remaining)
        log_norm = biggest + math.log(sum(math.exp(logits[m] - biggest) for m in remaining))
        total += logits[a] - log_norm
        remaining.remove(a)
    return total


def small_learned(levels: int = 1, **kwargs) -> LearnedPatcher:
    """A seeded learned patcher small enough for exhaustive checks."""
    torch.manual_seed(0)
    return LearnedPatcher(hidden_size=8, n_layers=2, levels=levels, **kwargs)


def make(name: str, levels: int = 1):
    """The patcher ``name`` (the learned one small and seeded) with ``levels`` levels."""
    if name == "learned":
        return small_learned(levels)
    return make_patcher(name, levels=levels)
