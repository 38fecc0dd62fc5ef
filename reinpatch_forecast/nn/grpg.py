"""Group Relative Policy Gradient (GRPG): advantages and the policy loss.

Shape legend
------------
R : rows (series); each row has its own group of patchings
G : group size
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

__all__ = ["SCALE_REWARDS", "PolicyLoss", "group_advantages", "policy_loss"]

ScaleRewards = Literal["group", "batch", "none"]
SCALE_REWARDS: tuple[str, ...] = ("group", "batch", "none")


@dataclass
class PolicyLoss:
    """The policy loss of a batch and its diagnostics (all scalars, diagnostics detached).

    Attributes
    ----------
    loss
        ``-mean(A * log p) - entropy_coef * mean(entropy)``; gradients reach the patcher only.
    mean_reward
        Mean of the rewards.
    advantage_std
        Standard deviation of the advantages (0 when every group is tied).
    entropy
        Mean policy entropy.
    """

    loss: Tensor
    mean_reward: Tensor
    advantage_std: Tensor
    entropy: Tensor


def group_advantages(
    rewards: Tensor, scale: ScaleRewards = "group", eps: float = 1e-6
) -> Tensor:
    """Rewards centred within each group and optionally scaled.

    Parameters
    ----------
    rewards
        ``(R, G)``.
    scale
        ``"group"``: divide by each group's standard deviation (GRPO); ``"batch"``: by the
        standard deviation of all centred rewards; ``"none"``: centre only.
    eps
        Added to the standard deviation.

    Returns
    -------
    Tensor
        ``(R, G)``, detached. A group whose rewards are all equal gets exactly zero advantages,
        so it contributes nothing (rather than rounding noise divided by ``eps``).
    """
    if scale not in SCALE_REWARDS:
        raise ValueError(f"scale_rewards must be one of {SCALE_REWARDS}, got {scale!r}.")
    rewards = rewards.detach()
    tied = (rewards.amax(dim=1, keepdim=True) == rewards.amin(dim=1, keepdim=True))  # (R, 1)
    centred = rewards - rewards.mean(dim=1, keepdim=True)  # (R, G)
    if scale == "group":
        centred = centred / (rewards.std(dim=1, keepdim=True, unbiased=False) + eps)
    elif scale == "batch":
        centred = centred / (centred.std(unbiased=False) + eps)
    return torch.where(tied, torch.zeros_like(centred), centred)  # (R, G)


def policy_loss(
    rewards: Tensor,
    log_prob: Tensor,
    entropy: Tensor,
    entropy_coef: float = 0.0,
    scale: ScaleRewards = "group",
) -> PolicyLoss:
    """The GRPG policy loss.

    Parameters
    ----------
    rewards
        ``(R, G)``: reward of every draw (``-loss``); detached here.
    log_prob
        ``(R, G)``: log-probability of every draw under the policy.
    entropy
        ``(R,)``: policy entropy per row.
    entropy_coef
        Weight of the entropy bonus.
    scale
        See :func:`group_advantages`.
    """
    advantages = group_advantages(rewards, scale)  # (R, G)
    entropy_mean = entropy.mean()
    loss = -(advantages * log_prob).mean() - entropy_coef * entropy_mean
    return PolicyLoss(
        loss=loss,
        mean_reward=rewards.detach().mean(),
        advantage_std=advantages.std(unbiased=False),
        entropy=entropy_mean.detach(),
    )
