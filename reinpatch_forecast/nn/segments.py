"""Segment operations on variable-size, contiguous patches.

Shape legend
------------
R : rows (series; channels folded into the batch, possibly times a group)
L : lookback length (positions in the window)
N : number of patches (the token budget)
P : points each patch is resampled to
d : feature size

N1, N2 : fine (level-1) and coarse (level-2) patches of a two-level patching

A patching of one row is given by its sorted start positions ``starts`` of shape
``(R, N)`` with ``starts[:, 0] == 0``; patch ``j`` spans ``[starts[j], starts[j+1])`` and the
last one ends at ``L``. Every function here is vectorised over rows and patches and keeps
static shapes, so a batch of patchings is one tensor and no Python loop runs per row.

A two-level patching adds ``coarse_starts`` ``(R, N2)``, a subset of ``starts`` that holds 0:
coarse patch ``i`` is the union of the consecutive fine patches that start in
``[coarse_starts[i], coarse_starts[i+1])``.
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import Tensor

__all__ = [
    "token_budget",
    "check_budget",
    "starts_from_boundaries",
    "boundaries_from_starts",
    "patch_ends",
    "patch_lengths",
    "segment_ids",
    "segment_mean",
    "resample_patches",
    "coarse_token_budget",
    "coarse_segment_ids",
    "coarse_token_starts",
    "pool_tokens",
]


def token_budget(input_length: int, compression_rate: float) -> int:
    """Number of patches ``N = ceil(L / R)`` for a lookback ``L`` and a compression rate ``R``."""
    check_budget(input_length, compression_rate)
    return max(1, int(math.ceil(input_length / compression_rate)))


def check_budget(input_length: int, compression_rate: float) -> None:
    """Raise a ``ValueError`` if ``compression_rate`` cannot be used with ``input_length``."""
    if not isinstance(input_length, numbers.Integral) or input_length < 1:
        raise ValueError(
            f"input_length must be a positive integer, got {input_length!r}."
        )
    if (
        isinstance(compression_rate, bool)
        or not isinstance(compression_rate, numbers.Real)
        or not math.isfinite(compression_rate)
    ):
        raise ValueError(
            f"compression_rate must be a finite number >= 1, got {compression_rate!r}."
        )
    if compression_rate < 1:
        raise ValueError(
            f"compression_rate must be >= 1 (one token per step at most), got {compression_rate}. "
            "Use compression_rate=1 for one token per time step."
        )
    if compression_rate > input_length:
        raise ValueError(
            f"compression_rate={compression_rate} is larger than the lookback "
            f"input_length={input_length}: that leaves less than one step per token. "
            f"Use a compression_rate <= {input_length} or a longer lookback."
        )


def starts_from_boundaries(boundaries: Tensor, n_patches: int) -> Tensor:
    """Sorted start positions of the patches marked in a boundary mask.

    Parameters
    ----------
    boundaries
        ``(R, L)`` bool, ``True`` where a patch starts. Position 0 must be ``True`` and every
        row must hold exactly ``n_patches`` ``True`` values (not checked here: this runs on
        the hot path; see :func:`boundaries_from_starts` for the inverse).
    n_patches
        ``N``.

    Returns
    -------
    Tensor
        ``(R, N)`` int64, sorted ascending.
    """
    length = boundaries.shape[-1]
    positions = torch.arange(length, device=boundaries.device)  # (L,)
    # Unmarked positions are pushed past L so a sort brings the marked ones first, in order.
    keys = torch.where(boundaries, positions, positions + length)  # (R, L)
    return torch.sort(keys, dim=-1).values[:, :n_patches]  # (R, N)


def boundaries_from_starts(starts: Tensor, length: int) -> Tensor:
    """Boundary mask of a patching.

    Parameters
    ----------
    starts
        ``(R, N)`` int64 start positions.
    length
        ``L``.

    Returns
    -------
    Tensor
        ``(R, L)`` bool, ``True`` at every start.
    """
    mask = torch.zeros(starts.shape[0], length, dtype=torch.bool, device=starts.device)
    return mask.scatter_(1, starts, True)  # (R, L)


def patch_ends(starts: Tensor, length: int) -> Tensor:
    """Exclusive end of every patch: the next start, and ``L`` for the last patch.

    ``starts`` is ``(..., N)``; the result has the same shape.
    """
    last = torch.full_like(starts[..., :1], length)  # (..., 1)
    return torch.cat([starts[..., 1:], last], dim=-1)  # (..., N)


def patch_lengths(starts: Tensor, length: int) -> Tensor:
    """Length of every patch, ``(..., N)`` int64 from ``starts`` ``(..., N)``."""
    return patch_ends(starts, length) - starts  # (..., N)


def segment_ids(starts: Tensor, length: int) -> Tensor:
    """Index of the patch each position belongs to.

    Parameters
    ----------
    starts
        ``(R, N)`` int64 sorted start positions with ``starts[:, 0] == 0``.
    length
        ``L``.

    Returns
    -------
    Tensor
        ``(R, L)`` int64 in ``[0, N)``.
    """
    return boundaries_from_starts(starts, length).long().cumsum(dim=-1) - 1  # (R, L)


def segment_mean(features: Tensor, starts: Tensor) -> Tensor:
    """Mean of ``features`` over every patch, through differences of a cumulative sum.

    The features of a series are computed once and shared by every patching of that series:
    ``starts`` may hold ``G`` patchings per row of ``features`` (a GRPG group).

    Parameters
    ----------
    features
        ``(R, L, d)`` float.
    starts
        ``(R, G, N)`` int64, sorted along the last axis, ``starts[..., 0] == 0``.

    Returns
    -------
    Tensor
        ``(R, G, N, d)``: the mean of ``features`` over each patch.
    """
    rows, length, dim = features.shape
    _, group, n_patches = starts.shape
    # Prefix sums with a leading zero: sum over [a, b) = prefix[b] - prefix[a].
    prefix = torch.cat(
        [features.new_zeros(rows, 1, dim), features.cumsum(dim=1)], dim=1
    )  # (R, L+1, d)
    ends = patch_ends(starts, length)  # (R, G, N)
    index = torch.stack([starts, ends], dim=-2).reshape(rows, group * 2 * n_patches)  # (R, G*2*N)
    picked = prefix.gather(1, index.unsqueeze(-1).expand(-1, -1, dim))  # (R, G*2*N, d)
    picked = picked.reshape(rows, group, 2, n_patches, dim)  # (R, G, 2, N, d)
    sums = picked[:, :, 1] - picked[:, :, 0]  # (R, G, N, d)
    lengths = (ends - starts).unsqueeze(-1).to(features.dtype)  # (R, G, N, 1)
    return sums / lengths  # (R, G, N, d)


def resample_patches(values: Tensor, starts: Tensor, n_points: int) -> Tensor:
    """Linearly resample every patch of a series to ``n_points`` equally spaced points.

    A patch ``[s, e)`` is read at the fractional positions ``s + k (e - 1 - s) / (P - 1)``,
    ``k = 0 .. P-1`` (its midpoint when ``P == 1``), so the first and last points are the patch's
    first and last values and its shape is kept whatever its length (a patch of length one
    gives ``P`` copies of its value).

    Parameters
    ----------
    values
        ``(R, L)`` float.
    starts
        ``(R, G, N)`` int64, sorted along the last axis, ``starts[..., 0] == 0``.
    n_points
        ``P >= 1``.

    Returns
    -------
    Tensor
        ``(R, G, N, P)``.
    """
    if n_points < 1:
        raise ValueError(f"n_points must be >= 1, got {n_points}.")
    rows, length = values.shape
    # Positions are computed in integers, s + floor(k (len-1) / (P-1)) plus a remainder, so a
    # point that falls on a step reads that step exactly (no float rounding of the position).
    span = patch_lengths(starts, length) - 1  # (R, G, N)
    if n_points == 1:
        numerator = span.unsqueeze(-1)  # (R, G, N, 1): the midpoint, (len-1) / 2
        denominator = 2
    else:
        k = torch.arange(n_points, device=values.device)  # (P,)
        numerator = span.unsqueeze(-1) * k  # (R, G, N, P)
        denominator = n_points - 1
    lower = starts.unsqueeze(-1) + torch.div(numerator, denominator, rounding_mode="floor")
    weight = (numerator % denominator).to(values.dtype) / denominator  # (R, G, N, P) in [0, 1)
    upper = (lower + 1).clamp_(max=length - 1)
    below = values.gather(1, lower.reshape(rows, -1)).reshape(lower.shape)  # (R, G, N, P)
    above = values.gather(1, upper.reshape(rows, -1)).reshape(lower.shape)  # (R, G, N, P)
    return below + weight * (above - below)  # (R, G, N, P)


def coarse_token_budget(n_patches: int, coarse_rate: float) -> int:
    """Number of coarse patches ``N2 = ceil(N1 / R2)`` over ``N1`` fine patches.

    Raises a ``ValueError`` unless ``1 <= R2 <= N1``, i.e. ``1 <= N2 <= N1``.
    """
    if (
        isinstance(coarse_rate, bool)
        or not isinstance(coarse_rate, numbers.Real)
        or not math.isfinite(coarse_rate)
        or coarse_rate < 1
    ):
        raise ValueError(
            f"The level-2 compression rate R2 must be a finite number >= 1 (fine patches per "
            f"coarse patch), got {coarse_rate!r}."
        )
    if coarse_rate > n_patches:
        raise ValueError(
            f"The level-2 compression rate R2={coarse_rate} is larger than the N1={n_patches} "
            f"fine patches: that leaves less than one fine patch per coarse patch. Use "
            f"R2 <= {n_patches}, a smaller R1 or a longer lookback."
        )
    return max(1, int(math.ceil(n_patches / coarse_rate)))


def coarse_segment_ids(starts: Tensor, coarse_starts: Tensor) -> Tensor:
    """Index of the coarse patch each fine patch belongs to.

    Fine patch ``j`` lies in coarse patch ``(number of coarse starts <= starts[j]) - 1``; for a
    nested patching this is the coarse patch whose span contains the fine one.

    Parameters
    ----------
    starts
        ``(..., N1)`` int64 sorted fine starts, ``starts[..., 0] == 0``.
    coarse_starts
        ``(..., N2)`` int64 sorted coarse starts, ``coarse_starts[..., 0] == 0``.

    Returns
    -------
    Tensor
        ``(..., N1)`` int64 in ``[0, N2)``, non-decreasing along the last axis.
    """
    return torch.searchsorted(coarse_starts.contiguous(), starts.contiguous(), right=True) - 1


def coarse_token_starts(starts: Tensor, coarse_starts: Tensor) -> Tensor:
    """Index of the first fine patch of every coarse patch (a patching of the fine tokens).

    The coarse patches, seen as runs of fine tokens, are themselves a patching of a sequence of
    length ``N1``, so the segment helpers above apply to token sequences unchanged.

    Parameters
    ----------
    starts
        ``(..., N1)`` int64 sorted fine starts.
    coarse_starts
        ``(..., N2)`` int64 sorted coarse starts, each one of ``starts`` (nested levels).

    Returns
    -------
    Tensor
        ``(..., N2)`` int64 in ``[0, N1)``, sorted, first entry 0.
    """
    # Exact matches (coarse starts are fine starts), so the left insertion point is the index.
    return torch.searchsorted(starts.contiguous(), coarse_starts.contiguous())


def pool_tokens(tokens: Tensor, token_starts: Tensor) -> Tensor:
    """Mean of consecutive tokens over every coarse patch.

    Parameters
    ----------
    tokens
        ``(R, N1, d)`` fine tokens.
    token_starts
        ``(R, N2)`` int64: index of the first fine token of every coarse patch
        (:func:`coarse_token_starts`), sorted, first entry 0.

    Returns
    -------
    Tensor
        ``(R, N2, d)``: each coarse token is the plain mean of its fine tokens.
    """
    # A run of tokens is a patch of a length-N1 sequence: one prefix-sum segment mean.
    return segment_mean(tokens, token_starts.unsqueeze(1))[:, 0]  # (R, N2, d)
