"""Per-sample losses for GRPG rewards, from darts' loss functions and likelihoods.

darts reduces a loss over the whole batch (``loss_fn`` with ``reduction="mean"``, a likelihood's
``compute_loss``), but GRPG needs one reward per series and draw. These helpers compute the
same loss element by element, without reduction.

Shape legend: S samples (``B*G``), H horizon, C channels, Q parameters per step.
"""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn

from ._darts_api import distribution

__all__ = ["elementwise_loss"]


def _unreduced(criterion: nn.Module) -> nn.Module | None:
    """A copy of a torch loss that returns one value per element, or ``None`` if impossible."""
    if not hasattr(criterion, "reduction"):
        return None
    unreduced = copy.copy(criterion)
    unreduced.reduction = "none"
    return unreduced


def elementwise_loss(
    prediction: Tensor, target: Tensor, likelihood=None, criterion: nn.Module | None = None
) -> Tensor:
    """The training loss of every forecast element.

    Parameters
    ----------
    prediction
        ``(S, H, C, Q)`` raw module output.
    target
        ``(S, H, C)``.
    likelihood
        A darts ``TorchLikelihood`` (``QuantileRegression`` or a distribution likelihood), or
        ``None``.
    criterion
        The darts model's ``loss_fn`` (used when there is no likelihood).

    Returns
    -------
    Tensor
        ``(S, H, C)``: pinball loss summed over quantiles, negative log-likelihood, or the
        criterion without reduction (squared error if the criterion cannot be unreduced).
    """
    if likelihood is not None:
        quantiles = getattr(likelihood, "quantiles", None)
        if quantiles is not None:  # QuantileRegression: the pinball loss, as darts computes it
            levels = torch.tensor(quantiles, dtype=prediction.dtype, device=prediction.device)
            errors = target.unsqueeze(-1) - prediction  # (S, H, C, Q)
            return torch.maximum((levels - 1) * errors, levels * errors).sum(dim=-1)
        return -distribution(likelihood, prediction).log_prob(target)  # (S, H, C)
    point = prediction[..., 0]  # (S, H, C)
    unreduced = _unreduced(criterion) if criterion is not None else None
    if unreduced is not None:
        values = unreduced(point, target)
        if values.shape == target.shape:
            return values
    return (point - target) ** 2
