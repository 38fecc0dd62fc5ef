"""The CPU fast paths of the model's small 1-D convolutions, in one place.

Each function computes what an ``nn.Conv1d`` module computes, with its weights, up to float
rounding, where oneDNN's conv kernel is slow for the model's narrow shapes (paired
whole-process timings in ``benchmarks/results/speed.md``):

- :func:`replicate_conv1d`: a ``padding="same"``, ``padding_mode="replicate"`` conv without
  PyTorch's separate pad (``replication_pad1d`` copies the whole input first);
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

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["replicate_conv1d", "step_major_conv1d", "pointwise_conv1d"]

#: Convs with at most this many input channels run as one matrix product with the shifted
#: copies of the input: oneDNN's conv kernel is about ten times slower than that product for
#: the learned patcher's two input channels (the series and its steps), while for the
#: hidden-to-hidden convs its kernel is the faster one.
FEW_INPUT_CHANNELS = 2


def replicate_conv1d(conv: nn.Conv1d, x: Tensor) -> Tensor:
    """``conv(x)`` for a ``padding="same"``, ``padding_mode="replicate"`` conv, without the pad.

    Parameters
    ----------
    conv
        A 1-D conv with an odd kernel, ``padding="same"``, ``padding_mode="replicate"``,
        ``groups=1`` and a bias.
    x
        ``(R, C_in, L)``.

    Returns
    -------
    Tensor
        ``(R, C_out, L)``, equal to ``conv(x)`` up to float rounding (gradients included).
    """
    if conv.in_channels <= FEW_INPUT_CHANNELS:
        return _conv_as_product(conv, x)
    return _conv_with_edge_taps(conv, x)


def _conv_as_product(conv: nn.Conv1d, x: Tensor) -> Tensor:
    """The conv as one product of its ``(C_out, C_in * k)`` weight with the shifted inputs.

    Cheap only when ``C_in * k`` is small: the shifted copies hold ``C_in * k * L`` values per
    row.
    """
    rows, channels, length = x.shape
    kernel, dilation = conv.kernel_size[0], conv.dilation[0]
    reach = (kernel // 2) * dilation  # steps the kernel reads on each side
    padded = F.pad(x, (reach, reach), mode="replicate")  # (R, C_in, L + 2 * reach)
    # taps[r, c, j, t] = padded[r, c, t + j * dilation]: what tap j reads at step t
    taps = padded.unfold(-1, length, 1)  # (R, C_in, 2 * reach + 1, L)
    if dilation > 1:
        taps = taps[:, :, ::dilation]  # (R, C_in, k, L)
    taps = taps.reshape(rows, channels * kernel, length)  # (R, C_in * k, L)
    weight = conv.weight.reshape(conv.out_channels, -1)  # (C_out, C_in * k)
    return torch.matmul(weight, taps) + conv.bias.unsqueeze(-1)  # (R, C_out, L)


def _conv_with_edge_taps(conv: nn.Conv1d, x: Tensor) -> Tensor:
    """The conv zero-padded inside its own kernel, plus what replication adds at the edges.

    Each tap that reads past an edge gets what replication would have given it there:
    ``W_j @ x[..., 0]`` (or ``x[..., -1]``) is added to the positions where it is out of range.
    The loop runs over the ``k`` taps, never over rows or positions.
    """
    kernel, dilation = conv.kernel_size[0], conv.dilation[0]
    half, length = kernel // 2, x.shape[-1]
    out = F.conv1d(x, conv.weight, conv.bias, padding=half * dilation, dilation=dilation)
    for tap in range(kernel):
        offset = (tap - half) * dilation  # tap reads position t + offset
        if offset == 0:
            continue
        edge = x[..., :1] if offset < 0 else x[..., -1:]  # (R, C_in, 1): the replicated value
        correction = torch.matmul(conv.weight[..., tap], edge)  # (R, C_out, 1)
        span = min(abs(offset), length)  # positions where this tap is out of range
        if offset < 0:
            out[..., :span] += correction
        else:
            out[..., length - span:] += correction
    return out  # (R, C_out, L)


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
