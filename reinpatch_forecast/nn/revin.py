"""Reversible instance normalisation (RevIN, Kim et al., ICLR 2022).

Each series is standardised by the mean and standard deviation of its own lookback window,
and the forecast is mapped back with the same statistics. Unlike darts' ``RINorm`` this module
keeps no state between calls: the statistics travel in a :class:`InstanceStats` object, so a
GRPG group and a plain batch can never mix them up.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

__all__ = ["InstanceStats", "RevIN"]

#: ``1 / 0.1**2``: windows of a mean square of at least ``0.1**2`` get the full ``eps``.
_INV_FULL_FLOOR_MS = 100.0


@dataclass
class InstanceStats:
    """Per-series statistics of a lookback window.

    Attributes
    ----------
    mean
        ``(R, 1)``.
    std
        ``(R, 1)``, strictly positive.
    """

    mean: Tensor
    std: Tensor


class RevIN(nn.Module):
    """Instance normalisation of rows of series, optionally with a learned affine map.

    Parameters
    ----------
    n_channels
        Number of channels ``C``; used only by the affine map (one weight and bias per channel).
        Rows are ordered channel-fastest, as produced by folding ``(B, C, L)`` into ``(B*C, L)``.
    affine
        Learn a per-channel scale and shift applied after normalisation. Off by default so the
        patcher, which reads the normalised series, stays transferable across datasets.
    eps
        Variance floor of a series on an ordinary scale: ``eps * min(1, (rms / 0.1)**2)`` is
        added to the variance of each row, ``rms`` the root mean square of its lookback window
        (and never less than the dtype's smallest normal number, so an all-zero series divides
        by a positive standard deviation). A constant series thus normalises to zeros and is
        forecast as the constant, with no division by zero.

    Notes
    -----
    Why relative: an absolute floor sets a scale of its own. With ``eps = 1e-5`` added to the
    variance, every series whose standard deviation is far below ``sqrt(eps) ~ 3e-3`` (data in
    small units, ~1e-12) would be normalised as if it were constant and forecast with a spread
    of ~1e-3, whatever its own scale. Below ``rms = 0.1`` the floor shrinks with the square of
    the series' scale (level and spread together, both in the series' units), so there a
    series ``x`` and ``1e-12 * x`` normalise alike: each as an absolute floor of ``eps`` treats
    a series at ``rms = 0.1`` (a floor of ``1e-3 * rms**2``).

    Why capped at ``eps`` from ``rms = 0.1`` up: there the floor is the plain ``eps``, so
    ordinary data (a standardised series, whose windows have an rms near 1) normalise as with
    the usual RevIN; and a large level is not mistaken for noise, as an uncapped
    ``1e-3 * rms**2`` would flatten a series at 300 +- 0.5.
    """

    def __init__(self, n_channels: int = 1, affine: bool = False, eps: float = 1e-5) -> None:
        super().__init__()
        self.n_channels = n_channels
        self.affine = affine
        self.eps = eps
        if affine:
            self.weight = nn.Parameter(torch.ones(n_channels))
            self.bias = nn.Parameter(torch.zeros(n_channels))

    def statistics(self, x: Tensor) -> InstanceStats:
        """Statistics of ``x`` ``(R, L)`` over its last axis."""
        mean = x.mean(dim=-1, keepdim=True)  # (R, 1)
        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (R, 1)
        # mean**2 + var is the mean square: below rms 0.1 the floor follows the series' scale,
        # from there up it is eps itself, bit for bit (class notes)
        scale = ((mean.square() + var) * _INV_FULL_FLOOR_MS).clamp(max=1.0)  # (R, 1)
        floor = (self.eps * scale).clamp(min=torch.finfo(x.dtype).tiny)  # (R, 1)
        return InstanceStats(mean=mean, std=torch.sqrt(var + floor))

    def normalise(self, x: Tensor, stats: InstanceStats) -> Tensor:
        """Standardise ``x`` ``(R, L)`` without the affine map (what the patcher reads)."""
        return (x - stats.mean) / stats.std  # (R, L)

    def _channel_params(self, rows: int) -> tuple[Tensor, Tensor]:
        """The affine weight and bias of the first ``rows`` rows, ``(R, 1)`` each (rows
        channel-fastest)."""
        # modulo, not a repeat: the first rows of a batch (the scored ones of a GRPG step) need
        # not be whole windows
        channel = torch.arange(rows, device=self.weight.device) % self.n_channels  # (R,)
        return self.weight[channel].unsqueeze(-1), self.bias[channel].unsqueeze(-1)  # (R, 1)

    def apply_affine(self, z: Tensor) -> Tensor:
        """Apply the affine map to a normalised ``z`` ``(R, L)`` (identity when not affine)."""
        if not self.affine:
            return z
        weight, bias = self._channel_params(z.shape[0])
        return z * weight + bias  # (R, L)

    def denormalise(self, y: Tensor, stats: InstanceStats, shift: bool = True) -> Tensor:
        """Map a normalised forecast ``y`` ``(R, ...)`` back to the scale of its series.

        The leading axis of ``y`` must hold one row per row of the statistics, or a multiple
        of it whose consecutive blocks share a row's statistics (a group of ``G`` rollouts).
        With ``shift=False`` only the scale is undone (for a spread such as a standard
        deviation, which must not move with the series' level).
        """
        rows = stats.mean.shape[0]
        group = y.shape[0] // rows
        shape = (rows, 1) + (1,) * (y.dim() - 1)  # broadcasts over the group and the rest
        y = y.reshape((rows, group) + y.shape[1:])  # (R, G, ...)
        if self.affine:
            weight, bias = self._channel_params(rows)
            if shift:
                y = (y - bias.reshape(shape)) / (weight.reshape(shape) + self.eps * self.eps)
            else:
                y = y / (weight.reshape(shape).abs() + self.eps * self.eps)
        y = y * stats.std.reshape(shape)
        if shift:
            y = y + stats.mean.reshape(shape)
        return y.reshape((rows * group,) + y.shape[2:])  # (R*G, ...)
