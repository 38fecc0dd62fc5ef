"""Shared helpers of the nn tests: a float64 Plackett–Luce reference, tiny patchers and networks,
and the sampling-frequency check."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch
from hypothesis import settings
from scipy import stats

from reinpatch_forecast.nn.network import ReinPatchConfig, ReinPatchNetwork
from reinpatch_forecast.nn.patchers import LearnedPatcher, make_patcher

# The benchmark ablations (other policies and readouts, token-part switches) are subclasses
# of the package's classes; the tests that compare the package with them import them here.
_BENCHMARKS = str(Path(__file__).resolve().parents[2] / "benchmarks")
if _BENCHMARKS not in sys.path:
    sys.path.insert(0, _BENCHMARKS)
import variants  # noqa: E402

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
    patcher = variants.make_patcher("learned", policy=policy, hidden_size=8, n_layers=2,
                                    levels=levels, **kwargs)
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
    """A small network configuration: L = 32, N = 8 patches of mean length 4, G = 4.

    ``overrides`` are flat keywords (``d_model``, ``patcher_hidden_size``, ..., and the
    ablations of ``benchmarks/variants.py``), nested as :class:`ReinPatchConfig` takes them.
    """
    values = dict(
        input_length=32, output_length=6, n_channels=2, compression_rate=4, group_size=4,
        d_model=16, n_heads=2, n_layers=1, patcher_hidden_size=8, patcher_layers=2,
        resample_points=4,
    )
    values.update(overrides)
    nested, ablation = variants.config_values(values)
    if variants.Ablation(**ablation).is_package:
        return ReinPatchConfig(**nested)
    return variants.VariantConfig(**nested, ablation=ablation)


def small_network(seed: int = 0, **overrides) -> ReinPatchNetwork:
    """A seeded :class:`ReinPatchNetwork` of :func:`small_config` (a benchmark variant's
    when an override is an ablation)."""
    torch.manual_seed(seed)
    config = small_config(**overrides)
    if isinstance(config, variants.VariantConfig):
        return variants.VariantNetwork(config)
    return ReinPatchNetwork(config)


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


def network_of(config: ReinPatchConfig, **kwargs) -> ReinPatchNetwork:
    """The network of ``config``: the benchmark variant's for a ``VariantConfig``."""
    if isinstance(config, variants.VariantConfig):
        return variants.VariantNetwork(config, **kwargs)
    return ReinPatchNetwork(config, **kwargs)


def _rate(length: int, count: int) -> float:
    """A compression rate that gives exactly ``count`` patches of ``length`` steps."""
    rate = length / count
    while math.ceil(length / rate) > count:
        rate = math.nextafter(rate, math.inf)
    return rate


def small_backbone(input_length: int, output_length: int, n_patches: int,
                   n_coarse_patches: int | None = None, budget: str = "exact", **flat):
    """A backbone of ``n_patches`` (and ``n_coarse_patches``) tokens from flat keywords (sizes
    and the ablations of ``benchmarks/variants.py``; the package's backbone without any)."""
    from reinpatch_forecast.nn import Backbone

    rate = _rate(input_length, n_patches)
    levels = 1
    if n_coarse_patches is not None:
        rate, levels = (rate, _rate(n_patches, n_coarse_patches)), 2
    config = small_config(input_length=input_length, output_length=output_length,
                          compression_rate=rate, levels=levels, budget=budget,
                          **{"d_model": 64, "n_heads": 4, "n_layers": 2, "resample_points": 8,
                             **flat})
    if isinstance(config, variants.VariantConfig):
        return variants.VariantBackbone(config, config.ablation)
    return Backbone(config)
