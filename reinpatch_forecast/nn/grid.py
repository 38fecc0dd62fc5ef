"""The uniform grid of patch starts, and how far each of its boundaries may move.

Every policy of the learned patcher starts from this grid: the offset policy
moves each interior boundary within its radius, the density policy places boundaries at the
quantiles of a density that is uniform *per grid patch* at initialisation.

Shape legend
------------
S : slots of the axis the grid lives on (time steps ``L``, or fine tokens ``N1`` at level 2)
n : grid starts (patches), ``k = n - 1`` interior boundaries
D : offsets per boundary, ``2 * max_radius + 1``
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["uniform_start_values", "uniform_starts", "uniform_gaps", "OffsetCandidates",
           "offset_candidates"]


def uniform_start_values(length: int, n_patches: int) -> list[int]:
    """:func:`uniform_starts` as Python integers (``N`` of them).

    The grid depends on ``L`` and ``N`` only, so it is computed in plain integers: the
    quantities derived from it (the shortest grid patch, the offset radii) are then Python
    numbers, which ``torch.export`` (the ONNX export) keeps as constants instead of reading
    them from tensors.
    """
    patch = math.ceil(length / n_patches)
    if (n_patches - 1) * patch < length:
        return [0] + [length - (n_patches - index) * patch for index in range(1, n_patches)]
    return [index * length // n_patches for index in range(n_patches)]


def uniform_starts(length: int, n_patches: int, device: torch.device | None = None) -> Tensor:
    """Start positions of ``n_patches`` equal patches of a window of ``length`` steps, ``(N,)``.

    Patches of ``ceil(L / N)`` steps are aligned to the end of the window (the most recent
    patches are whole, as in PatchTST) and the first patch holds the remainder. When that
    would leave the first patch empty, the starts are spread evenly instead.
    """
    values = uniform_start_values(length, n_patches)
    return torch.tensor(values, dtype=torch.int64, device=device)  # (N,)


def uniform_gaps(length: int, n_patches: int) -> list[int]:
    """Patch lengths of the uniform grid, ``N`` Python integers (:func:`uniform_start_values`)."""
    starts = uniform_start_values(length, n_patches)
    return [end - start for start, end in zip(starts, starts[1:] + [length])]


@dataclass
class OffsetCandidates:
    """Where each interior boundary of a grid may move.

    Attributes
    ----------
    slot
        ``(k, D)`` int64: the slot boundary ``j`` moves to with offset ``delta[d]`` (clamped
        into the axis where the offset is not allowed).
    allowed
        ``(k, D)`` bool: ``|delta| <= radius_j``.
    distance
        ``(D,)`` float32: ``|delta|``.
    """

    slot: Tensor
    allowed: Tensor
    distance: Tensor


def offset_candidates(grid: Tensor | Sequence[int], size: int,
                      device: torch.device | None = None) -> OffsetCandidates:
    """The offsets every interior boundary of ``grid`` may take.

    Boundary ``j`` (``1 <= j < n``) moves by ``delta`` with
    ``|delta| <= m_j = floor((min(gap_{j-1}, gap_j) - 1) / 2)``, the gaps being the grid's patch
    lengths. Two neighbours then never meet or cross (each uses less than half of the patch
    between them), so every choice of offsets gives sorted, distinct starts and patches of at
    least one step: with 8-step patches ``m = 3`` and lengths range over ``2 .. 14``.

    Parameters
    ----------
    grid
        ``(n,)`` int64 sorted starts, ``grid[0] == 0``: a tensor, or Python integers (such as
        :func:`uniform_start_values`), whose largest radius, which sets ``D``, is then found
        without reading a tensor (so ``torch.export`` keeps ``D`` a constant).
    size
        ``S``: the axis length (the end of the last patch).
    device
        Where the candidates live when ``grid`` is given as integers (a tensor's own device
        otherwise).
    """
    max_radius = None
    if not isinstance(grid, Tensor):
        values = [int(value) for value in grid]
        gap_values = [end - start for start, end in zip(values, values[1:] + [size])]  # (n,)
        max_radius = max([max(0, (min(left, right) - 1) // 2)
                          for left, right in zip(gap_values[:-1], gap_values[1:])], default=0)
        grid = torch.tensor(values, dtype=torch.int64, device=device)  # (n,)
    gaps = torch.diff(F.pad(grid, (0, 1), value=size))  # (n,) patch lengths
    radius = ((torch.minimum(gaps[:-1], gaps[1:]) - 1) // 2).clamp(min=0)  # (k,)
    if max_radius is None:
        max_radius = int(radius.max()) if radius.numel() else 0
    delta = torch.arange(-max_radius, max_radius + 1, device=grid.device)  # (D,)
    slot = (grid[1:, None] + delta).clamp(0, size - 1)  # (k, D)
    allowed = delta.abs() <= radius[:, None]  # (k, D)
    return OffsetCandidates(slot=slot, allowed=allowed, distance=delta.abs().float())
