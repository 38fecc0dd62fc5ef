"""Boundary policies: how the learned patcher's scores become patchings.

The patcher's conv stack gives one score per position, ``a (R, L)``. A policy turns the scores
into a distribution over patchings with exactly ``N`` patches, draws from it (training) or
takes its mode (validation and prediction), and reports the exact log-probability of each
draw, its entropy and its KL divergence to the policy's *reference* (the distribution of an
all-zero score, centred on the uniform grid):

The package's policy is :class:`DensityPolicy`: a Gaussian action on per-cell log-densities;
boundaries sit at the quantiles of the cumulative density, so it can move boundaries far from
the grid (reallocate resolution across the window). At two levels, the coarse boundaries are
categorical offsets of the uniform grid on the *fine-token* axis (a coarse patch is a run of
whole fine patches, nested by construction; :func:`coarse_offsets`).

With a zero score (the zero-initialised head of a new patcher) the mode is exactly
:func:`~reinpatch_forecast.nn.grid.uniform_starts`.

The density policy also takes an *at-most* token budget (the paper's minimum compression
rate): a categorical action picks a share of the ``N`` slots (:data:`BUDGET_SHARES`), the
boundaries sit at the quantiles ``j / n`` of the ``n`` slots used, and the unused slots hold
the start ``L`` (empty patches at the end, masked by the backbone), so every shape stays
static.

The mode (prediction's decode) exports to ONNX (``docs/deployment.md``): the grid and every
size derived from it are Python integers, and the two operators ONNX lacks, ``searchsorted``
and ``cummax``, take exact replacements while exporting
(:func:`~reinpatch_forecast.nn.segments.insertion_points`, ``_running_max``). Sampling
draws from a ``torch.Generator`` and is not exported (training only).

Shape legend
------------
R : rows (series)
G : draws per row
L : lookback length
N : patches, ``k = N - 1`` interior boundaries (``N1``/``N2`` and ``k1``/``k2`` at two levels)
D : offsets per boundary
K : density cells, ``N * knots``
S : budget shares, ``len(BUDGET_SHARES)``
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ..errors import ReinPatchInputError
from .grid import offset_candidates, uniform_gaps, uniform_start_values
from .segments import insertion_points

__all__ = ["BUDGET_SHARES", "budget_counts", "PolicyDraw", "DensityPolicy",
           "coarse_offsets", "gumbel"]

#: Shares of the ``N`` token slots an at-most budget may use, the full budget first: a new
#: patcher's zero budget score ties every share, and its mode (the first) is the exact budget.
BUDGET_SHARES = (1.0, 0.75, 0.5, 0.25)


def budget_counts(n_patches: int, device: torch.device | None = None) -> Tensor:
    """Patches used under each of :data:`BUDGET_SHARES`: ``max(1, ceil(share * N))``, ``(S,)``."""
    return torch.tensor([max(1, math.ceil(share * n_patches)) for share in BUDGET_SHARES],
                        dtype=torch.int64, device=device)


@dataclass
class PolicyDraw:
    """Draws of one level of boundaries.

    Attributes
    ----------
    starts
        ``(R, G, N)`` int64 sorted starts, ``starts[..., 0] == 0``.
    log_prob
        ``(R, G)``: exact log-probability (or log-density, for a continuous action) of each draw.
    entropy
        ``(R,)``: entropy of the row's distribution (mean over draws where it depends on one).
    kl
        ``(R,)``: KL divergence from the row's distribution to the reference policy.
    """

    starts: Tensor
    log_prob: Tensor
    entropy: Tensor
    kl: Tensor


def gumbel(shape: tuple[int, ...], like: Tensor,
           generator: torch.Generator | None = None) -> Tensor:
    """Standard Gumbel noise of ``shape`` with the dtype and device of ``like``."""
    uniform = torch.rand(shape, device=like.device, dtype=like.dtype, generator=generator)
    tiny = torch.finfo(like.dtype).tiny
    return -torch.log(-torch.log(uniform.clamp(min=tiny, max=1.0 - 1e-7)))


def _running_max(values: Tensor) -> Tensor:
    """``torch.cummax(values, dim=-1).values`` of int64 ``values`` ``(..., k)``, also inside an
    ONNX export.

    ONNX has no ``cummax`` (``aten.cummax`` has no ONNX function), so while
    :func:`torch.onnx.is_in_onnx_export` the running maximum is the maximum of each prefix, read
    through a ``(k, k)`` lower-triangular mask: the same integers exactly (a maximum of
    integers does not round). It builds ``(..., k, k)``, so eager runs keep ``cummax``.
    """
    if not torch.onnx.is_in_onnx_export():
        return torch.cummax(values, dim=-1).values
    size = values.shape[-1]
    index = torch.arange(size, device=values.device)
    later = index[None, :] > index[:, None]  # (k, k): entry j' lies after position j
    prefixes = values.unsqueeze(-2).masked_fill(later, torch.iinfo(values.dtype).min)  # (..., k, k)
    return prefixes.amax(dim=-1)  # (..., k)


def _categorical_offsets(scores: Tensor, grid: list[int], size: int, penalty: float,
                         sample: bool, generator: torch.Generator | None = None,
                         ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Independent categorical offsets of the interior boundaries of ``grid``.

    Logits ``l_j(delta) = scores[..., grid_j + delta] - penalty * |delta|`` over the allowed
    offsets; the reference is the same with zero scores.

    Parameters
    ----------
    scores
        ``(R, G, S)``: a candidate set per draw, one draw each.
    grid
        ``n`` grid starts on the axis of ``S`` slots, as Python integers
        (:func:`~reinpatch_forecast.nn.grid.uniform_start_values`).

    Returns
    -------
    tuple of Tensor
        Slots ``(R, G, n)`` (sorted, ``[..., 0] == 0``), log-probability ``(R, G)``, entropy
        ``(R,)`` and KL to the reference ``(R,)`` (means over the draws).
    """
    if len(grid) == 1:  # one patch: nothing to choose
        shape = scores.shape[:2]
        zeros = scores.new_zeros(shape)
        return (torch.zeros(*shape, 1, dtype=torch.long, device=scores.device), zeros,
                zeros[:, 0], zeros[:, 0])
    candidates = offset_candidates(grid, size, device=scores.device)
    penalty_term = penalty * candidates.distance.to(scores.dtype)  # (D,)
    logits = scores[..., candidates.slot] - penalty_term  # (R, G, k, D)
    logits = logits.masked_fill(~candidates.allowed, -math.inf)
    log_p = torch.log_softmax(logits, dim=-1)  # (R, G, k, D)
    reference = torch.log_softmax(
        (-penalty_term).expand_as(candidates.slot).masked_fill(~candidates.allowed, -math.inf),
        dim=-1,
    )  # (k, D)
    p = log_p.exp()
    # Offsets out of range have p = 0 and log p = -inf: zero their log terms before the
    # product, or the backward pass of 0 * -inf gives NaN gradients.
    finite_log_p = log_p.masked_fill(~candidates.allowed, 0.0)
    finite_reference = reference.masked_fill(~candidates.allowed, 0.0)
    entropy = -(p * finite_log_p).sum(dim=(-1, -2)).mean(dim=1)  # (R,)
    kl = (p * (finite_log_p - finite_reference)).sum(dim=(-1, -2)).mean(dim=1)  # (R,)
    if sample:
        noisy = log_p.detach() + gumbel(tuple(log_p.shape), log_p, generator)
        choice = noisy.argmax(dim=-1)  # (R, G, k): Gumbel-max, one offset per boundary
    else:
        choice = log_p.detach().argmax(dim=-1)  # (R, G, k): the mode
    log_prob = log_p.gather(-1, choice.unsqueeze(-1)).squeeze(-1).sum(dim=-1)  # (R, G)
    boundary = torch.arange(len(grid) - 1, device=scores.device)  # (k,)
    slots = candidates.slot[boundary, choice]  # (R, G, k)
    return F.pad(slots, (1, 0), value=0), log_prob, entropy, kl


def coarse_offsets(coarse_scores: Tensor, starts: Tensor, n_coarse: int, penalty: float,
                   sample: bool, generator: torch.Generator | None = None) -> PolicyDraw:
    """Coarse starts as offsets of the uniform grid on the fine-token axis.

    Parameters
    ----------
    coarse_scores
        ``(R, L)`` level-2 scores per position.
    starts
        ``(R, G, N1)`` fine starts of every draw.
    n_coarse
        ``N2``.
    sample
        Draw (training) or take the mode.

    Returns
    -------
    PolicyDraw
        ``starts`` ``(R, G, N2)``: a subset of the fine starts of the same draw.
    """
    rows, group, n_fine = starts.shape
    token_scores = coarse_scores.gather(1, starts.reshape(rows, -1)).reshape(starts.shape)
    grid = uniform_start_values(n_fine, n_coarse)  # N2 fine-token indices
    tokens, log_prob, entropy, kl = _categorical_offsets(
        token_scores, grid, n_fine, penalty, sample, generator
    )  # tokens (R, G, N2)
    return PolicyDraw(starts=starts.gather(-1, tokens), log_prob=log_prob, entropy=entropy,
                      kl=kl)


@dataclass
class CellSteps:
    """The steps of each density cell, as a padded index: the mean of a row's scores over a
    cell costs ``O(L)`` (a dense step-to-cell matrix would cost ``O(L * K)``, quadratic in the
    lookback at a fixed compression rate).

    Attributes
    ----------
    index : Tensor
        ``(K, M)`` int64: the steps of every cell, padded to the longest cell ``M``.
    valid : Tensor
        ``(K, M)`` bool: which entries of ``index`` are steps of the cell.
    counts : Tensor
        ``(K,)``: steps per cell (an empty cell reads 0).
    """

    index: Tensor
    valid: Tensor
    counts: Tensor

    @classmethod
    def of(cls, cell_starts: np.ndarray, length: int, device: torch.device) -> "CellSteps":
        """The steps of the cells starting at ``cell_starts`` ``(K,)`` (fractional steps,
        increasing) in a window of ``length``: a step belongs to the cell its centre falls in.

        The cells depend on ``L``, ``N`` and the knots only, so they are computed on the host:
        a traced export (ONNX) keeps them as constants.
        """
        centre = np.arange(length, dtype=np.float64) + 0.5  # (L,)
        cell = np.clip(np.searchsorted(cell_starts, centre, side="right") - 1, 0, None)  # (L,)
        counts = np.bincount(cell, minlength=len(cell_starts))  # (K,)
        first = np.cumsum(counts) - counts  # (K,)
        offsets = np.arange(counts.max())  # (M,)
        valid = offsets < counts[:, None]  # (K, M)
        index = np.minimum(first[:, None] + offsets, length - 1)  # (K, M)
        return cls(torch.as_tensor(index, dtype=torch.int64, device=device),
                   torch.as_tensor(valid, device=device),
                   torch.as_tensor(counts, dtype=torch.int64, device=device))

    def means(self, scores: Tensor) -> Tensor:
        """``(R, L)`` scores -> ``(R, K)`` their means over each cell."""
        gathered = scores[:, self.index] * self.valid.to(scores.dtype)  # (R, K, M)
        return gathered.sum(dim=-1) / self.counts.clamp(min=1).to(scores.dtype)


class DensityPolicy:
    """Boundaries at the quantiles of a density whose log is a Gaussian action per cell.

    Each patch of the uniform grid is split into ``knots`` equal cells (``K = N * knots``). The
    action is a log-density per cell, ``u = mu + sigma * eps`` with ``mu`` the mean score over
    the cell; the mass of a cell is ``softmax(u)``, spread evenly over it, and boundary ``j``
    sits where the cumulative mass reaches ``j / N`` (rounded to a step, then pushed apart to
    at least ``min_length`` steps per patch). With ``u = 0`` every grid patch holds ``1 / N`` of
    the mass, so the boundaries are the grid. The log-probability is the exact Gaussian
    log-density of ``u``; the reference is ``N(0, sigma^2)`` per cell.

    Parameters
    ----------
    sigma
        Exploration scale of the action.
    knots
        Cells per grid patch.
    min_length
        Shortest patch (capped at the grid's shortest patch, so a zero action keeps the grid).
    antithetic
        Draw ``eps`` in pairs ``(eps, -eps)`` when ``G`` is even (less variance in the
        advantage).
    decode_margin
        The mode shrinks every cell's mean toward zero by ``decode_margin * sigma`` (a soft
        threshold), so a cell the patcher cannot tell from the grid within that share of its
        own exploration scale decodes as the grid. ``0`` keeps the mode ``u = mu``. Draws are
        unchanged.
    """

    def __init__(self, sigma: float = 0.5, knots: int = 4, min_length: int = 2,
                 antithetic: bool = True, decode_margin: float = 0.0) -> None:
        if not sigma > 0:
            raise ReinPatchInputError(f"The density policy's sigma must be > 0, got {sigma}.")
        if not decode_margin >= 0:
            raise ReinPatchInputError(
                f"The density policy's decode_margin must be >= 0, got {decode_margin}."
            )
        if knots < 1 or min_length < 1:
            raise ReinPatchInputError(
                f"knots and min_length must be >= 1, got {knots}, {min_length}."
            )
        self.sigma = float(sigma)
        self.knots = int(knots)
        self.min_length = int(min_length)
        self.antithetic = antithetic
        self.decode_margin = float(decode_margin)

    def _mode_action(self, mean: Tensor) -> Tensor:
        """The mode's action from the cell means ``(R, K)``: ``mean`` soft-thresholded at
        ``decode_margin * sigma``."""
        if self.decode_margin == 0:
            return mean
        return torch.sign(mean) * F.relu(mean.abs() - self.decode_margin * self.sigma)

    def _cells(self, length: int, n_patches: int,
               device: torch.device) -> tuple[Tensor, Tensor, "CellSteps"]:
        """Cell starts ``(K,)`` and lengths ``(K,)`` (fractional steps), and the steps each
        cell averages (:class:`CellSteps`); computed once per ``(L, N, device)``."""
        # Cached: a handful of host and tensor operations that every draw would otherwise
        # repeat (on a batch of a few windows they cost as much as the draw). Set here, not in
        # __init__, so a policy pickled without the cache loads.
        cache = self.__dict__.setdefault("_cell_cache", {})
        key = (length, n_patches, torch.device(device))
        if key not in cache:
            # Built as ordinary tensors even when the first call predicts under inference
            # mode: a later training step saves them for backward.
            with torch.inference_mode(False):
                cache[key] = self._new_cells(length, n_patches, device)
        return cache[key]

    def _new_cells(self, length: int, n_patches: int,
                   device: torch.device) -> tuple[Tensor, Tensor, "CellSteps"]:
        """:meth:`_cells`, computed on the host (float64)."""
        grid = np.asarray(uniform_start_values(length, n_patches), dtype=np.float64)  # (N,)
        gaps = np.asarray(uniform_gaps(length, n_patches), dtype=np.float64)  # (N,)
        starts = (grid[:, None] + np.arange(self.knots) / self.knots * gaps[:, None]).reshape(-1)
        lengths = np.repeat(gaps / self.knots, self.knots)  # (K,)
        return (torch.as_tensor(starts, device=device), torch.as_tensor(lengths, device=device),
                CellSteps.of(starts, length, device))

    def _starts(self, action: Tensor, cell_start: Tensor, cell_length: Tensor, length: int,
                n_patches: int, used: Tensor | None = None) -> Tensor:
        """Starts ``(R, G, N)`` at the quantiles ``j / n`` of the cell masses ``softmax(u)``.

        ``used`` ``(R, G)``: patches ``n`` of each draw under an at-most budget (the slots
        ``j >= n`` start at ``L``); ``None``: ``n = N``.
        """
        # Python integers: the shortest grid patch is a constant of L and N, also when exported.
        shortest = min(self.min_length, min(uniform_gaps(length, n_patches)))
        mass = torch.softmax(action.double(), dim=-1)  # (R, G, K)
        cumulative = torch.cumsum(mass, dim=-1)  # (R, G, K)
        boundary = torch.arange(1, n_patches, device=action.device)  # (k,): j = 1 .. N-1
        if used is None:
            levels = boundary.double() / n_patches
            levels = levels.expand(*cumulative.shape[:-1], -1).contiguous()  # (R, G, k)
            room = length - n_patches * shortest
        else:
            count = used.unsqueeze(-1)  # (R, G, 1)
            levels = (boundary.double() / count.double()).clamp(max=1.0)  # (R, G, k)
            room = length - count * shortest  # (R, G, 1)
        # A cumulative sum of non-negative masses never decreases, so the left insertion point
        # is the first cell whose cumulative mass reaches the level.
        cell = insertion_points(cumulative, levels).clamp(max=cumulative.shape[-1] - 1)  # (R, G, k)
        before = (cumulative - mass).gather(-1, cell)  # (R, G, k): mass before the cell
        fraction = ((levels - before) / mass.gather(-1, cell)).clamp(0.0, 1.0)
        position = cell_start[cell] + fraction * cell_length[cell]  # (R, G, k)
        starts = torch.round(position).long()  # (R, G, k)
        # At least `shortest` steps per patch: a running maximum of s_j - j * shortest keeps
        # the starts apart, the clamp keeps room for the patches after them.
        shifted = _running_max(starts - boundary * shortest)
        shifted = torch.clamp(shifted, min=0)
        shifted = torch.minimum(shifted, torch.as_tensor(room, device=action.device))
        inner = shifted + boundary * shortest  # (R, G, k)
        if used is not None:
            inner = torch.where(boundary < used.unsqueeze(-1), inner, length)  # unused: at L
        return F.pad(inner, (1, 0), value=0)  # (R, G, N)

    @staticmethod
    def _budget(count_scores: Tensor, n_patches: int, group: int, sample: bool,
                generator: torch.Generator | None,
                ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Patches used per draw ``(R, G)``, the share's log-probability ``(R, G)``, and the
        entropy and KL to the uniform share ``(R,)``, from ``count_scores`` ``(R, S)``."""
        rows = count_scores.shape[0]
        log_p = torch.log_softmax(count_scores, dim=-1)  # (R, S)
        draws = group if sample else 1
        per_draw = log_p.unsqueeze(1).expand(rows, draws, -1)  # (R, G, S)
        if sample:
            noisy = per_draw.detach() + gumbel(tuple(per_draw.shape), log_p, generator)
            choice = noisy.argmax(dim=-1)  # (R, G): Gumbel-max
        else:
            choice = per_draw.detach().argmax(dim=-1)  # (R, 1): the mode (ties: full budget)
        log_prob = per_draw.gather(-1, choice.unsqueeze(-1)).squeeze(-1)  # (R, G)
        p = log_p.exp()
        entropy = -(p * log_p).sum(-1)  # (R,)
        kl = (p * (log_p + math.log(log_p.shape[-1]))).sum(-1)  # (R,): KL to uniform shares
        used = budget_counts(n_patches, count_scores.device)[choice]  # (R, G)
        return used, log_prob, entropy, kl

    def draw(self, scores: Tensor, n_patches: int, group: int, sample: bool,
             generator: torch.Generator | None = None,
             count_scores: Tensor | None = None) -> PolicyDraw:
        """Level-1 draws; ``count_scores`` ``(R, S)`` (one per share of
        :data:`BUDGET_SHARES`) makes the budget at-most: each draw also picks its share."""
        rows, length = scores.shape
        if n_patches == 1:  # one patch: nothing to choose (no action, probability 1)
            zeros = scores.new_zeros(rows, group if sample else 1)
            starts = torch.zeros(*zeros.shape, 1, dtype=torch.long, device=scores.device)
            return PolicyDraw(starts=starts, log_prob=zeros, entropy=zeros[:, 0],
                              kl=zeros[:, 0])
        cell_start, cell_length, steps = self._cells(length, n_patches, scores.device)
        mean = steps.means(scores)  # (R, K): log-density means
        cells = mean.shape[-1]
        if sample:
            if self.antithetic and group % 2 == 0:
                half = torch.randn(rows, group // 2, cells, device=scores.device,
                                   dtype=scores.dtype, generator=generator)
                noise = torch.cat([half, -half], dim=1)  # (R, G, K)
            else:
                noise = torch.randn(rows, group, cells, device=scores.device, dtype=scores.dtype,
                                    generator=generator)
            action = mean.detach().unsqueeze(1) + self.sigma * noise  # (R, G, K)
        else:
            action = self._mode_action(mean.detach()).unsqueeze(1)  # (R, 1, K): the mode
        log_norm = cells * (math.log(self.sigma) + 0.5 * math.log(2 * math.pi))
        log_prob = -((action - mean.unsqueeze(1)) ** 2).sum(-1) / (2 * self.sigma**2) - log_norm
        entropy = mean.new_full((rows,), cells * (0.5 + 0.5 * math.log(2 * math.pi))
                                + cells * math.log(self.sigma))
        kl = (mean**2).sum(-1) / (2 * self.sigma**2)  # (R,): KL(N(mu, s^2) || N(0, s^2))
        used = None
        if count_scores is not None:
            # Drawn after the action's noise, so the action of a seed is that of the exact budget.
            used, count_log_prob, count_entropy, count_kl = self._budget(
                count_scores, n_patches, group, sample, generator)
            log_prob = log_prob + count_log_prob
            entropy, kl = entropy + count_entropy, kl + count_kl
        starts = self._starts(action.detach(), cell_start, cell_length, length, n_patches, used)
        return PolicyDraw(starts=starts, log_prob=log_prob, entropy=entropy, kl=kl)

    def mode(self, scores: Tensor, n_patches: int,
             count_scores: Tensor | None = None) -> Tensor:
        """The starts of :meth:`draw`'s mode, ``(R, 1, N)``: the quantiles of ``u = mu`` (and
        the most likely budget share of ``count_scores`` ``(R, S)``), with none of the
        log-density, entropy and KL terms."""
        rows, length = scores.shape
        if n_patches == 1:
            return torch.zeros(rows, 1, 1, dtype=torch.long, device=scores.device)
        cell_start, cell_length, steps = self._cells(length, n_patches, scores.device)
        action = self._mode_action(steps.means(scores).detach()).unsqueeze(1)  # (R, 1, K)
        used = None
        if count_scores is not None:
            # argmax of the log-probabilities, as draw takes it (ties: the full budget)
            share = torch.log_softmax(count_scores.detach(), dim=-1).argmax(dim=-1, keepdim=True)
            used = budget_counts(n_patches, scores.device)[share]  # (R, 1)
        return self._starts(action, cell_start, cell_length, length, n_patches, used)

    def draw_coarse(self, coarse_scores: Tensor, starts: Tensor, n_coarse: int,
                    sample: bool, generator: torch.Generator | None = None) -> PolicyDraw:
        """Level-2 starts among the fine ``starts`` ``(R, G, N1)`` of every draw."""
        return coarse_offsets(coarse_scores, starts, n_coarse, 1.0, sample, generator)
