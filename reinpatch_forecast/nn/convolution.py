"""The CPU fast paths of the model's small 1-D convolutions, in one place.

Each function computes what an ``nn.Conv1d`` module computes, with its weights, up to float
rounding, where oneDNN's conv kernel costs more for these narrow shapes:

- :func:`step_major_conv1d`: the tokeniser's one-channel local conv, its result step-major
  ``(R, L, C_out)`` as the patch means and the skip read it;
- :func:`pointwise_conv1d`: the patcher's kernel-1 score head, a weighted sum over channels.

Shape legend
------------
R : rows
C_in, C_out : input and output channels
L : length
k : kernel taps
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["step_major_conv1d", "pointwise_conv1d"]


def step_major_conv1d(conv: nn.Conv1d, x: Tensor) -> Tensor:
    """``conv(x.unsqueeze(1)).transpose(1, 2)`` for a one-channel, replicate-padded ``"same"``
    conv (odd kernel, no dilation), ``(R, L, C_out)`` from ``x`` ``(R, L)``.

    The conv runs as a product of its ``(C_out, k)`` weight with the ``k`` taps of every step:
    the result comes out step-major without the conv's separate padding copy and transpose.
    """
    reach = conv.kernel_size[0] // 2
    padded = F.pad(x.unsqueeze(1), (reach, reach), mode="replicate")[:, 0]  # (R, L + 2*reach)
    taps = padded.unfold(-1, 2 * reach + 1, 1)  # (R, L, k): the steps each output reads
    return F.linear(taps, conv.weight[:, 0], conv.bias)  # (R, L, C_out)


def pointwise_conv1d(conv: nn.Conv1d, h: Tensor) -> Tensor:
    """A kernel-1 ``conv`` of ``h`` ``(R, C_in, L)`` as a weighted sum over the channels,
    ``(R, C_out, L)``: for a score head this narrow, oneDNN's conv kernel costs several times
    as much, and the sum gives every row the same rounding (a batched product does not)."""
    weighted = h.unsqueeze(1) * conv.weight  # (R, C_out, C_in, L)
    return weighted.sum(dim=2) + conv.bias.unsqueeze(-1)
