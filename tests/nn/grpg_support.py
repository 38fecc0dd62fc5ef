"""The training loop shared by the synthetic GRPG tasks (tests/nn/test_*_learns.py and the
``synthetic`` experiment of benchmarks/run.py)."""

from __future__ import annotations

from typing import Callable

import torch

from reinpatch_forecast.nn import ReinPatchNetwork

Batch = Callable[[torch.Generator], tuple[torch.Tensor, torch.Tensor]]


def train_by_grpg(network: ReinPatchNetwork, draw_batch: Batch, steps: int, seed: int,
                  policy_sign: float = 1.0) -> None:
    """Adam on the backbone (lr 1e-3) and the patcher (lr 3e-3) for ``steps`` GRPG steps.

    Parameters
    ----------
    network
        The network to train (in place).
    draw_batch
        Maps a generator to windows ``(B, L, C)`` and targets ``(B, H, C)``.
    steps
        Optimiser steps.
    seed
        Seed of the batch generator.
    policy_sign
        -1 flips the advantage's sign (the broken-on-purpose control of the spike task).
    """
    optimiser = torch.optim.Adam(
        [
            {"params": network.backbone_parameters(), "lr": 1e-3},
            {"params": network.patcher_parameters(), "lr": 3e-3},
        ]
    )
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x, y = draw_batch(generator)
        losses = network.training_losses(x, y)
        loss = losses.backbone_loss + policy_sign * losses.policy_loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
