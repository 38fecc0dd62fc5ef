"""ReinPatch's learned patcher: a dilated conv stack that scores every position, and a policy.

Shape legend
------------
R : rows (series, channels folded into the batch)
G : group size (patchings drawn per row)
L : lookback length
N : patches per row (the token budget); ``N1``, ``N2`` at two levels
hidden : width of the conv stack
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..errors import ReinPatchInputError
from .chunking import map_row_chunks, rows_per_chunk
from .convolution import pointwise_conv1d
from .patcher_interface import Patcher, Patching, check_budget_rule, check_levels
from .policies import BUDGET_SHARES, DensityPolicy

#: The learned patcher's sizes when none are given: its convolutional encoder's width, depth and
#: kernel (``LearnedPatcher``, ``ReinPatchConfig`` and the model options all read these). At
#: L = H = 96, 7 channels and R = 8 its forward is under a tenth of the backbone's FLOPs, with a
#: receptive field of 15 steps, and it still learns where boundaries matter (the spike task of
#: ``reinpatch-forecast demo``).
DEFAULT_PATCHER_SIZES: dict[str, int] = {"hidden_size": 8, "n_layers": 3, "kernel_size": 3}

__all__ = ["LearnedPatcher", "POLICY_OPTIONS"]

#: Settings of a :class:`LearnedPatcher`'s policy, besides its sizes.
POLICY_OPTIONS = ("density_sigma", "density_knots", "min_length", "at_most")


class _DilatedBlock(nn.Module):
    """Pre-norm residual block of the conv stack: ``h + conv(gelu(norm(h)))``."""

    def __init__(self, channels: int, kernel_size: int, dilation: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(
            channels, channels, kernel_size, dilation=dilation, padding="same",
            padding_mode="replicate",
        )
        self.norm = nn.GroupNorm(1, channels)

    def forward(self, h: Tensor) -> Tensor:
        """``(R, hidden, L) -> (R, hidden, L)``."""
        return h + self.conv(F.gelu(self.norm(h)))  # (R, hidden, L)


class LearnedPatcher(Patcher):
    """ReinPatch's patcher: a non-causal dilated 1-D conv stack and a boundary policy.

    The conv stack reads the normalised series and its first difference (receptive field
    ``1 + (kernel_size - 1) * (2**n_layers - 1)`` steps) and gives one score per position (two
    with two levels); the policy (:mod:`~reinpatch_forecast.nn.policies`) turns the scores
    into patchings. No parameter depends on ``L``, on the channels or on the dataset, so one
    trained patcher serves any series (the foundation patcher).

    Parameters
    ----------
    hidden_size
        Width of the conv stack.
    n_layers
        Residual blocks; block ``i`` has dilation ``2**i``.
    kernel_size
        Odd kernel size of every conv.
    levels
        1, or 2 for a second, coarser set of starts nested in the first (a second score head,
        ``coarse_output``, on the same conv stack).
    density_sigma, density_knots, min_length
        Exploration scale, cells per grid patch and shortest patch of the density policy
        (:class:`~reinpatch_forecast.nn.policies.DensityPolicy`).
    decode_margin
        The decode's soft threshold on the policy's cell means, in units of
        ``density_sigma`` (:class:`~reinpatch_forecast.nn.policies.DensityPolicy`): ``0``
        decodes the scores as they are; a foundation patcher used frozen keeps the grid where
        its scores stay within the margin.
    at_most
        An at-most token budget (one level): a head on the time-pooled features scores each
        share of :data:`~reinpatch_forecast.nn.policies.BUDGET_SHARES`, each draw picks how
        many of the ``N`` slots it uses, and the unused slots start at ``L``.

    The score heads start at zero, so a new patcher decodes exactly the uniform grid, with
    the full budget.

    Notes
    -----
    Two levels are drawn in sequence within one draw: the fine starts, then the coarse starts
    among that draw's fine starts. A draw's ``log_prob`` is the sum of both levels' exact
    log-probabilities; ``entropy`` and ``kl`` are the sums over levels (the coarse terms
    averaged over the draws, whose candidate sets differ).
    """

    #: The boundary policy's name (what plots and reports print).
    policy_name = "density"

    def __init__(self, hidden_size: int = DEFAULT_PATCHER_SIZES["hidden_size"],
                 n_layers: int = DEFAULT_PATCHER_SIZES["n_layers"],
                 kernel_size: int = DEFAULT_PATCHER_SIZES["kernel_size"], levels: int = 1,
                 density_sigma: float = 0.5, density_knots: int = 4, min_length: int = 2,
                 at_most: bool = False, decode_margin: float = 0.0) -> None:
        super().__init__()
        levels = check_levels(levels)
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ReinPatchInputError(
                f"kernel_size must be a positive odd integer, got {kernel_size}."
            )
        if hidden_size < 1 or n_layers < 0:
            raise ReinPatchInputError("hidden_size must be >= 1 and n_layers >= 0.")
        if not isinstance(at_most, bool):
            raise ReinPatchInputError(f"at_most must be True or False, got {at_most!r}.")
        check_budget_rule("at_most" if at_most else "exact", "learned", levels)
        self.hidden_size = hidden_size
        self.n_layers = n_layers
        self.kernel_size = kernel_size
        self.density_sigma = float(density_sigma)
        self.density_knots = int(density_knots)
        self.min_length = int(min_length)
        self.policy = DensityPolicy(self.density_sigma, self.density_knots, self.min_length,
                                    decode_margin=decode_margin)
        self.input_proj = nn.Conv1d(2, hidden_size, kernel_size, padding="same",
                                    padding_mode="replicate")
        self.blocks = nn.ModuleList(
            _DilatedBlock(hidden_size, kernel_size, 2**i) for i in range(n_layers)
        )
        self.output = nn.Conv1d(hidden_size, 1, 1)
        self.levels = levels
        if levels == 2:
            self.coarse_output = nn.Conv1d(hidden_size, 1, 1)
        self.at_most = at_most
        if at_most:
            self.count_output = nn.Linear(hidden_size, len(BUDGET_SHARES))
        # Zero score heads: a zero score is the reference policy, so the patcher starts at the
        # uniform grid and moves a boundary only once the reward has paid for it.
        for head in (self.output, getattr(self, "coarse_output", None),
                     getattr(self, "count_output", None)):
            if head is not None:
                nn.init.zeros_(head.weight)
                nn.init.zeros_(head.bias)

    def config(self) -> dict:
        """The constructor arguments (what :func:`~reinpatch_forecast.foundation.patcher_state`
        stores)."""
        return {
            "hidden_size": self.hidden_size, "n_layers": self.n_layers,
            "kernel_size": self.kernel_size, "levels": self.levels,
            "density_sigma": self.density_sigma, "density_knots": self.density_knots,
            "min_length": self.min_length, "at_most": self.at_most,
            "decode_margin": self.policy.decode_margin,
        }

    def _features(self, x: Tensor) -> Tensor:
        """Activated features of the conv stack, ``(R, hidden, L)`` from ``x`` ``(R, L)``."""
        step = F.pad(x[:, 1:] - x[:, :-1], (1, 0))  # (R, L): the jump into each position
        inputs = torch.stack([x, step], dim=1)  # (R, 2, L)
        h = self.input_proj(inputs)  # (R, hidden, L)
        for block in self.blocks:
            h = block(h)  # (R, hidden, L)
        return F.gelu(h)  # (R, hidden, L)

    #: Most elements of one ``(rows, hidden, L)`` activation of the conv stack before the rows
    #: are split into chunks (CPU only). The stack makes about twenty passes over each
    #: activation; a 1 MiB chunk stays in the cache between them, and none of its tensors is
    #: large enough for glibc to serve it with a fresh, page-faulting ``mmap``. This halves
    #: the patcher's time at ``R = 1792`` rows (a prediction batch of 256 windows x 7 channels).
    chunk_elements: int = 2**18

    def chunk_rows(self, length: int) -> int:
        """Rows per chunk of the conv stack on series of ``length`` steps."""
        return rows_per_chunk(self.chunk_elements, self.hidden_size * length)

    def _fine_logits(self, x: Tensor) -> Tensor:
        """:meth:`logits` in one pass, ``(r, L)`` from ``(r, L)``."""
        return pointwise_conv1d(self.output, self._features(x)).squeeze(1)  # (R, L)

    def logits(self, x: Tensor) -> Tensor:
        """One (level-1) score per position, ``(R, L)`` from ``x`` ``(R, L)``.

        Every row is computed on its own (the conv stack runs along time only), so long
        inputs run in chunks of rows (see :attr:`chunk_elements`) with the same result.
        """
        return map_row_chunks(self._fine_logits, (x,), self.chunk_rows(x.shape[-1]))

    def _both_logits(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Level-1 and level-2 scores in one pass, ``(r, L)`` each from ``(r, L)``."""
        h = self._features(x)  # (R, hidden, L)
        return (pointwise_conv1d(self.output, h).squeeze(1),
                pointwise_conv1d(self.coarse_output, h).squeeze(1))  # (R, L) x 2

    def level_logits(self, x: Tensor) -> tuple[Tensor, Tensor | None]:
        """Level-1 and level-2 scores per position, ``(R, L)`` each, from one conv pass.

        The level-2 scores are ``None`` for a ``levels=1`` patcher.
        """
        if self.levels == 1:
            return self.logits(x), None
        return map_row_chunks(self._both_logits, (x,), self.chunk_rows(x.shape[-1]))

    def _fine_and_budget_logits(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Level-1 scores ``(r, L)`` and budget-share scores ``(r, S)`` in one pass."""
        h = self._features(x)  # (R, hidden, L)
        return (pointwise_conv1d(self.output, h).squeeze(1),
                self.count_output(h.mean(dim=-1)))  # (R, L), (R, S)

    def _scores(self, x: Tensor) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """Level-1, level-2 and budget-share scores (``None`` where the patcher has none)."""
        if not self.at_most:
            return (*self.level_logits(x), None)
        fine, shares = map_row_chunks(self._fine_and_budget_logits, (x,),
                                      self.chunk_rows(x.shape[-1]))
        return fine, None, shares

    def _draw(self, scores: tuple[Tensor, Tensor | None, Tensor | None], n_patches: int,
              n_coarse_patches: int | None, group: int, sample: bool,
              generator: torch.Generator | None = None) -> Patching:
        """``group`` draws (``sample``) or the mode from the level scores ``(R, L)`` each (and
        the budget-share scores ``(R, S)`` of an at-most budget).

        The coarse starts are drawn among each draw's fine starts, with the same generator.
        """
        fine_scores, coarse_scores, share_scores = scores
        extra = {} if share_scores is None else {"count_scores": share_scores}
        fine = self.policy.draw(fine_scores, n_patches, group, sample, generator,
                                **extra)  # (R, G, N)
        if coarse_scores is None:
            return Patching(starts=fine.starts, log_prob=fine.log_prob, entropy=fine.entropy,
                            kl=fine.kl)
        coarse = self.policy.draw_coarse(coarse_scores, fine.starts, n_coarse_patches, sample,
                                         generator)
        return Patching(starts=fine.starts, log_prob=fine.log_prob + coarse.log_prob,
                        entropy=fine.entropy + coarse.entropy, kl=fine.kl + coarse.kl,
                        coarse_starts=coarse.starts)

    def sample(self, x: Tensor, n_patches: int, group_size: int,
               n_coarse_patches: int | None = None) -> Patching:
        self._check_budgets(n_patches, n_coarse_patches)
        return self._draw(self._scores(x), n_patches, n_coarse_patches, group_size, True)

    def decode(self, x: Tensor, n_patches: int,
               n_coarse_patches: int | None = None) -> Patching:
        self._check_budgets(n_patches, n_coarse_patches)
        return self._draw(self._scores(x), n_patches, n_coarse_patches, 1, False)

    def decode_starts(self, x: Tensor, n_patches: int,
                      n_coarse_patches: int | None = None) -> tuple[Tensor, Tensor | None]:
        """The starts of :meth:`decode`, ``(R, 1, N)`` (and ``(R, 1, N2)`` at two levels, else
        ``None``), from the policy's mode alone: no log-probability, entropy or KL."""
        self._check_budgets(n_patches, n_coarse_patches)
        fine_scores, coarse_scores, share_scores = self._scores(x)
        extra = {} if share_scores is None else {"count_scores": share_scores}
        starts = self.policy.mode(fine_scores, n_patches, **extra)  # (R, 1, N)
        if coarse_scores is None:
            return starts, None
        coarse = self.policy.draw_coarse(coarse_scores, starts, n_coarse_patches, False)
        return starts, coarse.starts  # (R, 1, N), (R, 1, N2)

    def explore(self, x: Tensor, n_patches: int, group_size: int,
                n_coarse_patches: int | None = None,
                generator: torch.Generator | None = None,
                sampled_rows: int | None = None) -> tuple[Patching, Patching]:
        """The decoded patching of every row and ``group_size`` sampled ones of the first
        ``sampled_rows`` rows (default all), from one pass of the conv stack.

        The samples' noise comes from ``generator`` (default: torch's global generator). Only
        the sampled rows carry gradients (their samples' log-probabilities and their decode's
        KL are what the policy loss reads), so the other rows are scored without them.

        Returns
        -------
        tuple of Patching
            The decode of every row (every field has ``R`` rows: ``starts`` ``(R, 1, N)``,
            ``log_prob`` ``(R, 1)``, ``kl`` and ``entropy`` ``(R,)``; those of the first
            ``Rs`` rows with gradients, the rest without) and the samples of the first ``Rs``
            rows (``starts`` ``(Rs, G, N)``, ``log_prob`` ``(Rs, G)`` with gradients), where
            ``Rs = sampled_rows``.
        """
        self._check_budgets(n_patches, n_coarse_patches)
        rows = x.shape[0]
        sampled_rows = rows if sampled_rows is None else min(sampled_rows, rows)
        scores = self._scores(x[:sampled_rows])
        decoded = self._draw(scores, n_patches, n_coarse_patches, 1, False)
        if sampled_rows < rows:
            with torch.no_grad():
                rest = self._draw(self._scores(x[sampled_rows:]), n_patches, n_coarse_patches,
                                  1, False)
            decoded = Patching(**{
                field.name: None if getattr(decoded, field.name) is None
                else torch.cat([getattr(decoded, field.name), getattr(rest, field.name)])
                for field in dataclasses.fields(Patching)})
        return decoded, self._draw(scores, n_patches, n_coarse_patches, group_size, True,
                                   generator)
