"""Patchers: what chooses where patches start.

Shape legend
------------
R : rows (series, channels folded into the batch)
G : group size (patchings drawn per row)
L : lookback length
N : patches per row (the token budget); ``k = N - 1`` starts are chosen, position 0 always starts
M : candidate start positions, ``M = L - 1`` (positions ``1 .. L-1``)
N1, N2 : fine (level-1) and coarse (level-2) patches of a two-level patching, ``N2 <= N1``
k1, k2 : starts chosen at each level, ``k1 = N1 - 1`` and ``k2 = N2 - 1``

Every patcher maps a normalised series ``x`` ``(R, L)`` to a
:class:`~reinpatch_forecast.nn.patcher_interface.Patching`. Only :class:`LearnedPatcher` (in
:mod:`~reinpatch_forecast.nn.learned_patcher`) has parameters; this module holds the fixed
rules it is compared with (uniform, random and volatility patches), :func:`make_patcher`, and
the names other code imports from here. None of the patchers depends on ``L``, on the number
of channels or on the dataset, so one trained patcher serves any series.

Hierarchy
---------
A patcher built with ``levels=2`` (``make_patcher(name, levels=2)``) also draws ``N2`` coarse
starts per patching, passed as ``n_coarse_patches`` to :meth:`Patcher.sample` and
:meth:`Patcher.decode`. The coarse starts are always chosen among the fine starts of the same
draw, and position 0 starts a patch at both levels, so the levels are nested by construction:
every coarse patch is a run of whole fine patches. A ``levels=1`` patcher refuses
``n_coarse_patches``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from ..errors import ReinPatchInputError
from .grid import uniform_starts
from .learned_patcher import POLICY_OPTIONS, LearnedPatcher
from .patcher_interface import PATCHER_NAMES, Patcher, Patching, check_levels

__all__ = [
    "Patching",
    "Patcher",
    "LearnedPatcher",
    "UniformPatcher",
    "RandomPatcher",
    "VolatilityPatcher",
    "uniform_starts",
    "make_patcher",
    "PATCHER_NAMES",
    "POLICY_OPTIONS",
]


def _sorted_starts(order: Tensor) -> Tensor:
    """Start positions from chosen candidate indices ``(R, G, k)``: ``(R, G, k+1)``, sorted.

    Candidate ``m`` is position ``m + 1``; position 0 is prepended.
    """
    positions = torch.sort(order, dim=-1).values + 1  # (R, G, k)
    return F.pad(positions, (1, 0), value=0)  # (R, G, N)


def _coarse_from_order(starts: Tensor, order: Tensor) -> Tensor:
    """Coarse starts chosen among the nonzero fine starts of the same draw.

    Parameters
    ----------
    starts
        ``(R, G, N1)`` sorted fine starts, ``starts[..., 0] == 0``.
    order
        ``(R, G, k2)`` int64 indices into ``starts[..., 1:]`` (the level-2 candidates).

    Returns
    -------
    Tensor
        ``(R, G, N2)`` sorted, with 0 prepended: a subset of ``starts`` row by row.
    """
    chosen = starts[..., 1:].gather(-1, order)  # (R, G, k2)
    return F.pad(torch.sort(chosen, dim=-1).values, (1, 0), value=0)  # (R, G, N2)


def _fixed(starts: Tensor, coarse_starts: Tensor | None = None) -> Patching:
    """A patching chosen by a rule: zero log-probability and entropy."""
    rows, group = starts.shape[:2]
    zeros = torch.zeros(rows, group, device=starts.device)
    return Patching(starts=starts, log_prob=zeros, entropy=zeros[:, 0], kl=zeros[:, 0],
                    coarse_starts=coarse_starts)


class _FixedRule(Patcher):
    """A deterministic rule without parameters: decoding is drawing one patching."""

    def __init__(self, levels: int = 1) -> None:
        super().__init__()
        self.levels = check_levels(levels)

    def decode(self, x: Tensor, n_patches: int,
               n_coarse_patches: int | None = None) -> Patching:
        return self.sample(x, n_patches, 1, n_coarse_patches)


class UniformPatcher(_FixedRule):
    """Fixed patches of equal size, as PatchTST (non-overlapping, stride = patch length).

    With ``levels=2`` the coarse starts are the uniform patching of the ``N1`` fine patches
    into ``N2`` runs (:func:`uniform_starts` of ``N1`` and ``N2`` picks which fine starts):
    every ``ceil(N1 / N2)``-th fine start counted from the end of the window, plus 0. That is
    every ``R2``-th fine start, the uniform grid of ``R1 * R2`` steps, whenever ``L`` is a
    multiple of ``R1 * R2``.
    """

    def sample(self, x: Tensor, n_patches: int, group_size: int,
               n_coarse_patches: int | None = None) -> Patching:
        self._check_budgets(n_patches, n_coarse_patches)
        starts = uniform_starts(x.shape[-1], n_patches, device=x.device)  # (N,)
        coarse = None
        if n_coarse_patches is not None:
            runs = uniform_starts(n_patches, n_coarse_patches, device=x.device)  # (N2,)
            coarse = starts[runs].expand(x.shape[0], group_size, n_coarse_patches)  # (R, G, N2)
        return _fixed(starts.expand(x.shape[0], group_size, n_patches), coarse)  # (R, G, N)


class RandomPatcher(Patcher):
    """A uniformly random set of ``N - 1`` starts (a reference: no signal at all).

    Training draws fresh sets from torch's global generator (seeded by the caller). Decoding
    draws from a generator seeded with ``seed`` on every call, so prediction is repeatable.
    With ``levels=2`` the coarse starts are a uniformly random subset of ``N2 - 1`` of the
    draw's nonzero fine starts, plus 0 (drawn after the fine starts, from the same generator).
    """

    def __init__(self, seed: int = 0, levels: int = 1) -> None:
        super().__init__()
        self.seed = seed
        self.levels = check_levels(levels)

    def _draw(self, rows: int, group: int, length: int, n_patches: int,
              generator: torch.Generator | None, device: torch.device,
              n_coarse_patches: int | None = None) -> tuple[Tensor, Tensor | None]:
        """Fine starts ``(R, G, N)`` and coarse starts ``(R, G, N2)`` (or ``None``) on ``device``.

        The draws run on the CPU, where ``generator`` lives, so a seed decodes alike on every
        device.
        """
        scores = torch.rand(rows, group, length - 1, generator=generator)  # (R, G, M)
        order = scores.topk(n_patches - 1, dim=-1).indices  # (R, G, k)
        starts = _sorted_starts(order)  # (R, G, N)
        coarse = None
        if n_coarse_patches is not None:
            scores = torch.rand(rows, group, n_patches - 1, generator=generator)  # (R, G, k1)
            order = scores.topk(n_coarse_patches - 1, dim=-1).indices  # (R, G, k2)
            coarse = _coarse_from_order(starts, order).to(device)  # (R, G, N2)
        return starts.to(device), coarse

    def sample(self, x: Tensor, n_patches: int, group_size: int,
               n_coarse_patches: int | None = None) -> Patching:
        self._check_budgets(n_patches, n_coarse_patches)
        return _fixed(*self._draw(x.shape[0], group_size, x.shape[-1], n_patches, None,
                                  x.device, n_coarse_patches))

    def decode(self, x: Tensor, n_patches: int,
               n_coarse_patches: int | None = None) -> Patching:
        self._check_budgets(n_patches, n_coarse_patches)
        generator = torch.Generator().manual_seed(self.seed)
        return _fixed(*self._draw(x.shape[0], 1, x.shape[-1], n_patches, generator, x.device,
                                  n_coarse_patches))


class VolatilityPatcher(_FixedRule):
    """Start patches at the ``N - 1`` largest absolute steps ``|x_t - x_{t-1}|``.

    A TimeSqueeze/EntroPE-like heuristic. Ties (a flat series) go to the earliest positions.
    With ``levels=2`` the coarse starts are the ``N2 - 1`` fine starts with the largest steps,
    plus 0 (the first ``N2 - 1`` of the same stable ranking, so they are fine starts).
    """

    def sample(self, x: Tensor, n_patches: int, group_size: int,
               n_coarse_patches: int | None = None) -> Patching:
        self._check_budgets(n_patches, n_coarse_patches)
        jumps = (x[:, 1:] - x[:, :-1]).abs()  # (R, M)
        # stable sort keeps ties in position order, so a flat window is patched deterministically
        ranked = torch.sort(jumps, dim=-1, descending=True, stable=True).indices  # (R, M)
        order = ranked[:, : n_patches - 1].unsqueeze(1)  # (R, 1, k)
        coarse = None
        if n_coarse_patches is not None:
            # A prefix of the fine ranking: nested in the fine starts by construction.
            coarse = _sorted_starts(ranked[:, : n_coarse_patches - 1].unsqueeze(1))
            coarse = coarse.expand(-1, group_size, -1)  # (R, G, N2)
        return _fixed(_sorted_starts(order).expand(-1, group_size, -1), coarse)  # (R, G, N)


def make_patcher(name: str, levels: int = 1, **learned_kwargs) -> Patcher:
    """Build a patcher from its name (one of :data:`PATCHER_NAMES`).

    Parameters
    ----------
    name
        ``"learned"``, ``"uniform"``, ``"random"`` or ``"volatility"``.
    levels
        1, or 2 for a patcher that also draws nested coarse starts.
    **learned_kwargs
        Constructor arguments of :class:`LearnedPatcher` (sizes and density settings; ignored
        by the reference patchers).
    """
    if name == "learned":
        return LearnedPatcher(levels=levels, **learned_kwargs)
    if name == "uniform":
        return UniformPatcher(levels=levels)
    if name == "random":
        return RandomPatcher(levels=levels)
    if name == "volatility":
        return VolatilityPatcher(levels=levels)
    raise ReinPatchInputError(
        f"Unknown patcher {name!r}. Use one of {', '.join(map(repr, PATCHER_NAMES))}, "
        "or a pretrained LearnedPatcher."
    )
