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

from ..errors import ReinPatchInputError

__all__ = [
    "insertion_points",
    "token_budget",
    "check_budget",
    "patch_ends",
    "patch_lengths",
    "segment_mean",
    "resample_patches",
    "coarse_token_budget",
    "coarse_token_starts",
    "pool_tokens",
]


def insertion_points(sorted_values: Tensor, values: Tensor, right: bool = False) -> Tensor:
    """``torch.searchsorted(sorted_values, values, right=right)``, also inside an ONNX export.

    ONNX has no ``searchsorted`` (``aten.searchsorted`` has no ONNX function), so while
    :func:`torch.onnx.is_in_onnx_export` the insertion points are counted instead: in a
    non-decreasing row, the left insertion point of ``v`` is the number of entries ``< v`` and
    the right one the number of entries ``<= v``, exactly, ties included (the comparisons
    are those of the binary search, in the same dtype). The count builds an ``(..., M, S)``
    comparison, ``S / log S`` times the work of the search, so eager runs keep the search.

    Parameters
    ----------
    sorted_values
        ``(..., S)``, non-decreasing along the last axis (``(S,)``: one row for every query).
    values
        ``(..., M)`` queries, the leading axes those of ``sorted_values`` (any shape with a
        one-dimensional ``sorted_values``).
    right
        Insert after equal entries instead of before them.

    Returns
    -------
    Tensor
        ``(..., M)`` int64 in ``[0, S]``.
    """
    if not torch.onnx.is_in_onnx_export():
        return torch.searchsorted(sorted_values.contiguous(), values.contiguous(), right=right)
    queries = values.unsqueeze(-1)  # (..., M, 1)
    # One row for every query, or a row per leading index: (S,) or (..., 1, S).
    table = sorted_values if sorted_values.dim() == 1 else sorted_values.unsqueeze(-2)
    before = table <= queries if right else table < queries  # (..., M, S)
    return before.sum(dim=-1)  # (..., M)


def token_budget(input_length: int, compression_rate: float) -> int:
    """Number of patches ``N = ceil(L / R)`` for a lookback ``L`` and a compression rate ``R``."""
    check_budget(input_length, compression_rate)
    return max(1, int(math.ceil(input_length / compression_rate)))


def check_budget(input_length: int, compression_rate: float) -> None:
    """Raise a ``ValueError`` if ``compression_rate`` cannot be used with ``input_length``."""
    if not isinstance(input_length, numbers.Integral) or input_length < 1:
        raise ReinPatchInputError(
            f"input_length must be a positive integer, got {input_length!r}."
        )
    if (
        isinstance(compression_rate, bool)
        or not isinstance(compression_rate, numbers.Real)
        or not math.isfinite(compression_rate)
    ):
        raise ReinPatchInputError(
            f"compression_rate must be a finite number >= 1, got {compression_rate!r}."
        )
    if compression_rate < 1:
        raise ReinPatchInputError(
            f"compression_rate must be >= 1 (one token per step at most), got {compression_rate}. "
            "Use compression_rate=1 for one token per time step."
        )
    if compression_rate > input_length:
        raise ReinPatchInputError(
            f"compression_rate={compression_rate} is larger than the lookback "
            f"input_length={input_length}: that leaves less than one step per token. "
            f"Use a compression_rate <= {input_length} or a longer lookback."
        )


def patch_ends(starts: Tensor, length: int) -> Tensor:
    """Exclusive end of every patch: the next start, and ``L`` for the last patch.

    ``starts`` is ``(..., N)``; the result has the same shape.
    """
    last = torch.full_like(starts[..., :1], length)  # (..., 1)
    return torch.cat([starts[..., 1:], last], dim=-1)  # (..., N)


def patch_lengths(starts: Tensor, length: int) -> Tensor:
    """Length of every patch, ``(..., N)`` int64 from ``starts`` ``(..., N)``."""
    return patch_ends(starts, length) - starts  # (..., N)


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
    # An empty patch (an unused slot of an at-most budget) has a zero sum: its mean reads 0.
    lengths = (ends - starts).clamp(min=1).unsqueeze(-1).to(features.dtype)  # (R, G, N, 1)
    return sums / lengths  # (R, G, N, d)


def resample_patches(values: Tensor, starts: Tensor, n_points: int) -> Tensor:
    """Area-resample every patch of a series to ``n_points`` values (box-filter resampling).

    The patch ``[s, e)`` of ``n = e - s`` steps is read as a piecewise-constant function (value
    ``x_t`` on ``[t, t + 1)``), its span is cut into ``P`` equal sub-intervals
    ``[s + k n / P, s + (k + 1) n / P)``, ``k = 0 .. P-1``, and point ``k`` is the mean of the
    function over sub-interval ``k`` (its integral divided by the width ``n / P``).

    Why area resampling: a patch the policy makes longer than ``P`` steps is box-averaged (a
    low-pass; the mean of the ``P`` points is the patch mean) instead of read at ``P`` points
    with the values in between skipped (aliasing), and a patch of up to ``P`` steps loses
    nothing. Exactly ``P`` steps give the patch's values themselves, bit for bit (a uniform
    ``P = R`` patching gives PatchTST's patches); fewer steps repeat the values piecewise
    constantly (each point is a value, or the length-weighted mean of two neighbours where a
    sub-interval straddles a step boundary; ``P / n`` copies of each value when ``n`` divides
    ``P``), a one-to-one map, so the values can be recovered. A constant patch gives the
    constant.

    Positions are kept in integers, in units of ``1 / P`` step, so the weights are exact ratios
    of integers and a sub-interval inside one step reads that step's value exactly. The whole
    steps inside a sub-interval are summed through a cumulative sum of the values (float64
    inside), differenced; the partial steps at both ends are gathered and weighted.

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
        ``(R, G, N, P)``, the dtype of ``values``.
    """
    if n_points < 1:
        raise ReinPatchInputError(f"n_points must be >= 1, got {n_points}.")
    rows, length = values.shape
    work = values.to(torch.promote_types(values.dtype, torch.float32))  # (R, L)
    steps = patch_lengths(starts, length).unsqueeze(-1)  # (R, G, N, 1): n
    point = torch.arange(n_points, device=values.device)  # (P,)
    # Sub-interval k of a patch is [lo, hi) = [k n, (k + 1) n) in units of 1/P step from its
    # start.
    lo = steps * point  # (R, G, N, P)
    hi = lo + steps  # (R, G, N, P)
    first = torch.div(lo, n_points, rounding_mode="floor")  # step holding the start
    last = torch.div(hi - 1, n_points, rounding_mode="floor")  # last step it overlaps
    # Overlap with the first and the last step (units of 1/P); the last counts only if it
    # differs from the first. Every step strictly between them is covered whole (P units).
    w_first = torch.minimum(hi, (first + 1) * n_points) - lo  # (R, G, N, P) in [1, P]
    w_last = torch.where(last > first, hi - last * n_points, 0)  # (R, G, N, P) in [0, P]
    offset = starts.unsqueeze(-1)  # (R, G, N, 1)
    # Absolute step indices, in [s, e); an empty patch at L (an unused slot) has zero weights,
    # and the clamp keeps its indices inside the window.
    first = (first + offset).clamp(max=length - 1)
    last = (last + offset).clamp(max=length - 1)
    # The whole steps are [inner_lo, inner_hi), empty when the sub-interval spans < 3 steps.
    inner_lo = first + 1  # (R, G, N, P)
    inner_hi = torch.maximum(last, inner_lo)  # (R, G, N, P)

    def pick(table: Tensor, index: Tensor) -> Tensor:
        return table.gather(1, index.reshape(rows, -1)).reshape(index.shape)  # (R, G, N, P)

    # The prefix sums are kept in float64 (float32 on MPS, which has no float64): in float32
    # their rounding, relative to the sum over the window so far, would dominate the error.
    wide = torch.float64 if values.device.type != "mps" else work.dtype
    prefix = work.to(wide).cumsum(dim=1)  # (R, L)
    prefix = torch.cat([prefix.new_zeros(rows, 1), prefix], dim=1)  # (R, L+1)
    inner = (pick(prefix, inner_hi) - pick(prefix, inner_lo)).to(work.dtype)  # (R, G, N, P)
    width = steps.clamp(min=1).to(work.dtype)  # (R, G, N, 1): n, the mean divides by n / P
    # Weights divided by n before the products: a sub-interval inside one step has weight
    # n / n = 1.0 and nothing else, so it returns that step's value exactly.
    out = (
        (w_first.to(work.dtype) / width) * pick(work, first)
        + (w_last.to(work.dtype) / width) * pick(work, last)
        + (n_points / width) * inner
    )  # (R, G, N, P)
    return out.to(values.dtype)


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
        raise ReinPatchInputError(
            f"The level-2 compression rate R2 must be a finite number >= 1 (fine patches per "
            f"coarse patch), got {coarse_rate!r}."
        )
    if coarse_rate > n_patches:
        raise ReinPatchInputError(
            f"The level-2 compression rate R2={coarse_rate} is larger than the N1={n_patches} "
            f"fine patches: that leaves less than one fine patch per coarse patch. Use "
            f"R2 <= {n_patches}, a smaller R1 or a longer lookback."
        )
    return max(1, int(math.ceil(n_patches / coarse_rate)))


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
    return insertion_points(starts, coarse_starts)


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
