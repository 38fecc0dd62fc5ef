"""The uniform grid of patch starts, and how far each of its boundaries may move.

Every policy of the learned patcher starts from this grid (``design.md`` §1): the offset policy
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
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["uniform_starts", "OffsetCandidates", "offset_candidates"]


def uniform_starts(length: int, n_patches: int, device: torch.device | None = None) -> Tensor:
    """Start positions of ``n_patches`` equal patches of a window of ``length`` steps, ``(N,)``.

    Patches of ``ceil(L / N)`` steps are aligned to the end of the window (the most recent
    patches are whole, as in PatchTST) and the first patch holds the remainder. When that
    would leave the first patch empty, the starts are spread evenly instead.
    """
    patch = math.ceil(length / n_patches)
    index = torch.arange(n_patches, device=device)
    if (n_patches - 1) * patch < length:
        starts = length - (n_patches - index) * patch  # (N,)
        starts[0] = 0
        return starts
    return torch.div(index * length, n_patches, rounding_mode="floor")  # (N,)


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


def offset_candidates(grid: Tensor, size: int) -> OffsetCandidates:
    """The offsets every interior boundary of ``grid`` may take.

    Boundary ``j`` (``1 <= j < n``) moves by ``delta`` with
    ``|delta| <= m_j = floor((min(gap_{j-1}, gap_j) - 1) / 2)``, the gaps being the grid's patch
    lengths. Two neighbours then never meet or cross (each uses less than half of the patch
    between them), so every choice of offsets gives sorted, distinct starts and patches of at
    least one step: with 8-step patches ``m = 3`` and lengths range over ``2 .. 14``.

    Parameters
    ----------
    grid
        ``(n,)`` int64 sorted starts, ``grid[0] == 0``.
    size
        ``S``: the axis length (the end of the last patch).
    """
    gaps = torch.diff(F.pad(grid, (0, 1), value=size))  # (n,) patch lengths
    radius = ((torch.minimum(gaps[:-1], gaps[1:]) - 1) // 2).clamp(min=0)  # (k,)
    max_radius = int(radius.max()) if radius.numel() else 0
    delta = torch.arange(-max_radius, max_radius + 1, device=grid.device)  # (D,)
    slot = (grid[1:, None] + delta).clamp(0, size - 1)  # (k, D)
    allowed = delta.abs() <= radius[:, None]  # (k, D)
    return OffsetCandidates(slot=slot, allowed=allowed, distance=delta.abs().float())
