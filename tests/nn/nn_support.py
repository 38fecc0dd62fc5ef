"""Shared helpers of the nn tests: a float64 Plackett–Luce reference, tiny patchers and networks,
and the sampling-frequency check."""

from __future__ import annotations

import math

import torch
from hypothesis import settings
from scipy import stats

from reinpatch_forecast.nn.network import ReinPatchConfig, ReinPatchNetwork
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


#: Every patcher, the learned one under each policy (``"learned:<policy>"``; plain
#: ``"learned"`` is the default policy).
ALL_PATCHERS = ("learned", "learned:density", "learned:topk", "uniform", "random", "volatility")


def small_learned(levels: int = 1, policy: str = "offset", scored: bool = False,
                  **kwargs) -> LearnedPatcher:
    """A seeded learned patcher small enough for exhaustive checks.

    ``scored``: random (not zero) score heads, so the policy is away from its reference.
    """
    torch.manual_seed(0)
    patcher = LearnedPatcher(policy=policy, hidden_size=8, n_layers=2, levels=levels, **kwargs)
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
    if name.startswith("learned"):
        policy = name.partition(":")[2] or "offset"
        return small_learned(levels, policy=policy, scored=True)
    return make_patcher(name, levels=levels)


def small_config(**overrides) -> ReinPatchConfig:
    """A small network configuration: L = 32, N = 8 patches of mean length 4, G = 4."""
    values = dict(
        input_length=32, output_length=6, n_channels=2, compression_rate=4, group_size=4,
        d_model=16, n_heads=2, n_layers=1, patcher_hidden_size=8, patcher_layers=2,
        resample_points=4,
    )
    values.update(overrides)
    return ReinPatchConfig(**values)


def small_network(seed: int = 0, **overrides) -> ReinPatchNetwork:
    """A seeded :class:`ReinPatchNetwork` of :func:`small_config`."""
    torch.manual_seed(seed)
    return ReinPatchNetwork(small_config(**overrides))


def check_sampled_frequencies(ordered: dict, exact: dict, sets: dict, n_draws: int) -> None:
    """Chi-square checks of sampled ordered draws and of their sets against exact probabilities.

    ``ordered`` counts each ordered outcome, ``exact`` is its probability, ``sets`` maps each
    unordered outcome to its ordered members.
    """
    outcomes = list(exact)
    observed = [ordered[o] for o in outcomes]
    expected = [n_draws * exact[o] for o in outcomes]
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    set_observed = [sum(ordered[o] for o in members) for members in sets.values()]
    set_expected = [n_draws * sum(exact[o] for o in members) for members in sets.values()]
    assert stats.chisquare(set_observed, set_expected).pvalue > 1e-3
    for obs, exp in zip(set_observed, set_expected):
        assert abs(obs - exp) < 5 * math.sqrt(exp) + 1
