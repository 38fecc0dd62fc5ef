"""Two-level patching pays off on a series with structure at two scales.

Each window is a level ``m ~ U(-1, 1)`` plus a slow sine (period 64 steps, random phase) plus a
train of short spikes (one step every 8, random phase, amplitude ``U(1, 3)``) plus Gaussian noise
(sigma 0.3); the target is the noise-free continuation over the horizon. The level and the sine
need the long view; where the next spike falls needs the spike phase, which a token of 16 steps
cannot resolve (it always holds two spikes) but a token of 4 steps can.

At the SAME final token count (6 tokens for the head's top level), a two-level network with
``compression_rate=(4, 4)`` (24 fine tokens pooled into 6 coarse ones) is compared with a
one-level network with ``compression_rate=16`` (6 tokens): same backbone sizes, seed, data and
steps. The tokens must be the head's only view of the window, so the networks are the
benchmarks' variant without the per-step skip (``benchmarks/variants.py``): the skip would hand
the head every step at full resolution, and the token count would stop mattering. Measured
(one CPU core, torch 2.13, seeds 0 and 1): uniform patchers after 150 steps, MSE 0.015-0.016
(levels=2) vs 0.41 (levels=1; variance of the target 1.30); learned patchers after 120
steps, 0.016-0.017 vs 0.32-0.38.
"""

from __future__ import annotations

import math

import pytest
import torch

from grpg_support import train_by_grpg  # noqa: E402
from nn_support import variants  # noqa: E402

LOOKBACK, HORIZON, SPIKE_PERIOD, SLOW_PERIOD = 96, 8, 8, 64
BATCH = 64
TWO_LEVEL_RATE, ONE_LEVEL_RATE = (4, 4), 16  # both give 6 top-level tokens on L = 96


def two_scale_batch(n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Windows ``(n, L, 1)`` and noise-free continuations ``(n, H, 1)``."""
    t = torch.arange(LOOKBACK + HORIZON)
    level = torch.rand(n, 1, generator=generator) * 2 - 1
    phase = torch.rand(n, 1, generator=generator) * 2 * math.pi
    slow = torch.sin(2 * math.pi * t / SLOW_PERIOD + phase)  # (n, L+H)
    spike_phase = torch.randint(0, SPIKE_PERIOD, (n, 1), generator=generator)
    amplitude = torch.rand(n, 1, generator=generator) * 2 + 1
    spikes = amplitude * (t % SPIKE_PERIOD == spike_phase).float()  # (n, L+H)
    clean = level + slow + spikes  # (n, L+H)
    x = clean[:, :LOOKBACK] + 0.3 * torch.randn(n, LOOKBACK, generator=generator)
    return x.unsqueeze(-1), clean[:, LOOKBACK:].unsqueeze(-1)


def train_and_evaluate(levels: int, patcher: str, steps: int, seed: int = 0):
    """Validation MSE and the trained network."""
    torch.manual_seed(seed)
    learned = patcher == "learned"
    network = variants.make_network(
        input_length=LOOKBACK, output_length=HORIZON, levels=levels,
        compression_rate=TWO_LEVEL_RATE if levels == 2 else ONE_LEVEL_RATE,
        patcher=patcher, group_size=8 if learned else 1,
        d_model=32, n_heads=4, n_layers=1, dropout=0.0, resample_points=4, revin=False,
        readout_skip=False,
    )
    config = network.config
    assert (config.n_coarse_patches if levels == 2 else config.n_patches) == 6
    train_by_grpg(network, lambda g: two_scale_batch(BATCH, g), steps, seed)
    network.eval()
    x, y = two_scale_batch(2000, torch.Generator().manual_seed(1234))
    with torch.no_grad():
        mse = ((network(x)[..., 0] - y) ** 2).mean().item()
    return mse, network, x


@pytest.mark.slow
def test_two_levels_beat_one_level_at_the_same_token_count_uniform():
    # Measured (150 steps): levels=2 ~0.015, levels=1 ~0.41.
    two, network, x = train_and_evaluate(2, "uniform", steps=150)
    one, _, _ = train_and_evaluate(1, "uniform", steps=150)
    assert two < 0.08, (two, one)
    assert two < 0.3 * one, (two, one)
    fine, coarse = network.boundaries(x[:50]), network.coarse_boundaries(x[:50])
    assert coarse.shape[-1] == 6 and fine.shape[-1] == 24
    assert bool((coarse.unsqueeze(-1) == fine.unsqueeze(-2)).any(-1).all())


@pytest.mark.slow
def test_two_levels_beat_one_level_at_the_same_token_count_learned():
    # GRPG through both levels: measured levels=2 ~0.017, levels=1 ~0.32-0.38 after 120 steps.
    two, network, x = train_and_evaluate(2, "learned", steps=120)
    one, _, _ = train_and_evaluate(1, "learned", steps=120)
    assert two < 0.2, (two, one)
    assert two < 0.75 * one, (two, one)
    fine, coarse = network.boundaries(x[:50]), network.coarse_boundaries(x[:50])
    assert bool((coarse.unsqueeze(-1) == fine.unsqueeze(-2)).any(-1).all())
