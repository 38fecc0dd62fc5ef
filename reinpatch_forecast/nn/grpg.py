"""Group Relative Policy Gradient (GRPG): advantages and the policy loss.

Every series draws ``G`` sampled patchings next to its decoded one. A sample's advantage is its
reward minus the decode's (the group-relative, self-critical baseline: exploring pays only
where a sample beats what validation and prediction would use), divided by the standard
deviation of all advantages of the batch. A per-group standard deviation would turn pure noise
into unit-size steps; the batch scale keeps a group whose samples barely differ from its decode
near zero.

Shape legend
------------
R : rows (series); each row has its own group of patchings
G : group size
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["PolicyLoss", "self_critical_advantages", "policy_loss"]


@dataclass
class PolicyLoss:
    """The policy loss of a batch and its mean KL term.

    Attributes
    ----------
    loss
        ``-mean(A * log pi) + kl_coef * mean(KL)``; gradients reach the patcher only.
    kl
        Mean KL divergence to the reference policy (detached).
    """

    loss: Tensor
    kl: Tensor


def self_critical_advantages(sample_rewards: Tensor, decode_rewards: Tensor,
                             eps: float = 1e-8) -> Tensor:
    """Sample reward minus the decode's reward, scaled by the batch standard deviation.

    Parameters
    ----------
    sample_rewards
        ``(R, G)``: reward of every sampled patching.
    decode_rewards
        ``(R,)``: reward of the decoded patching of the same series.
    eps
        Added to the standard deviation.

    Returns
    -------
    Tensor
        ``(R, G)``, detached. Exactly zero when every sample ties its decode (no signal, no
        step), rather than rounding noise divided by ``eps``.
    """
    advantages = (sample_rewards - decode_rewards.unsqueeze(-1)).detach()  # (R, G)
    scale = advantages.std(unbiased=False)
    # torch.where rather than an `if`: no host sync in the training step
    return torch.where(scale > 0, advantages / (scale + eps), 0.0)  # (R, G)


def policy_loss(advantages: Tensor, log_prob: Tensor, kl: Tensor,
                kl_coef: float = 0.0) -> PolicyLoss:
    """The GRPG policy loss with a KL anchor.

    Parameters
    ----------
    advantages
        ``(R, G)`` from :func:`self_critical_advantages` (treated as constants).
    log_prob
        ``(R, G)``: log-probability of every sample under the policy.
    kl
        ``(R,)``: KL divergence of each row's policy to the reference policy.
    kl_coef
        ``lambda_KL``.

    Returns
    -------
    PolicyLoss
        The scalar loss and the mean KL.
    """
    kl_mean = kl.mean()
    loss = -(advantages.detach() * log_prob).mean() + kl_coef * kl_mean
    return PolicyLoss(loss=loss, kl=kl_mean.detach())
