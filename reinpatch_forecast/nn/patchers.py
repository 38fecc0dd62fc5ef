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

Every patcher maps a normalised series ``x`` ``(R, L)`` to a :class:`Patching`. Only
:class:`LearnedPatcher` has parameters (a score network; its boundary policies live in
:mod:`~reinpatch_forecast.nn.policies`), and none of them depends on ``L``, on the number of
channels or on the dataset, so one trained patcher serves any series.

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

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .grid import uniform_starts
from .policies import DEFAULT_POLICY, POLICY_NAMES, make_policy, plackett_luce_log_prob

__all__ = [
    "Patching",
    "Patcher",
    "LearnedPatcher",
    "UniformPatcher",
    "RandomPatcher",
    "VolatilityPatcher",
    "plackett_luce_log_prob",
    "uniform_starts",
    "make_patcher",
    "PATCHER_NAMES",
    "POLICY_NAMES",
    "DEFAULT_POLICY",
]

PATCHER_NAMES = ("learned", "uniform", "random", "volatility")

#: Settings of a :class:`LearnedPatcher`'s policy, besides its name and sizes.
POLICY_OPTIONS = ("offset_penalty", "density_sigma", "density_knots", "min_length")


@dataclass
class Patching:
    """A group of patchings of every row.

    Attributes
    ----------
    starts
        ``(R, G, N)`` int64: sorted start positions, ``starts[..., 0] == 0``.
    log_prob
        ``(R, G)``: log-probability of each draw under the policy (zeros for fixed rules).
    entropy
        ``(R,)``: entropy of the policy's distribution (zeros for fixed rules), a diagnostic.
        With two levels, the sum over levels (see :class:`LearnedPatcher`).
    kl
        ``(R,)``: KL divergence from the policy to its reference (the policy of a zero score,
        centred on the uniform grid); the anchor of GRPG. Zeros for fixed rules.
    coarse_starts
        ``(R, G, N2)`` int64 or ``None``: the level-2 starts of a two-level patcher, sorted,
        ``coarse_starts[..., 0] == 0`` and every one of them also in ``starts`` of the same
        ``(row, draw)``; ``None`` for a single level. ``log_prob`` then covers both levels.
    """

    starts: Tensor
    log_prob: Tensor
    entropy: Tensor
    kl: Tensor
    coarse_starts: Tensor | None = None


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


def _check_levels(levels: int) -> int:
    if isinstance(levels, bool) or levels not in (1, 2):
        raise ValueError(
            f"levels must be 1 (one set of boundaries) or 2 (fine and coarse, nested), "
            f"got {levels!r}."
        )
    return int(levels)


class Patcher(nn.Module):
    """Interface of a patcher.

    Subclasses implement :meth:`sample` (``G`` patchings per row, used in training) and
    :meth:`decode` (one deterministic patching per row, used in validation and prediction).

    ``levels`` is 1 (the class default) or 2; a two-level patcher fills
    :attr:`Patching.coarse_starts` with ``n_coarse_patches`` starts nested in the fine ones.
    """

    levels: int = 1

    def sample(self, x: Tensor, n_patches: int, group_size: int,
               n_coarse_patches: int | None = None) -> Patching:
        """Draw ``group_size`` patchings of every row of ``x`` ``(R, L)`` into ``n_patches``.

        ``n_coarse_patches`` (``N2``) is required by a two-level patcher and refused by a
        single-level one.
        """
        raise NotImplementedError

    def decode(self, x: Tensor, n_patches: int,
               n_coarse_patches: int | None = None) -> Patching:
        """The deterministic patching of every row of ``x`` ``(R, L)``; ``G == 1``."""
        raise NotImplementedError

    def _check_budgets(self, n_patches: int, n_coarse_patches: int | None) -> None:
        """Raise a ``ValueError`` unless ``n_coarse_patches`` fits ``self.levels``."""
        name = type(self).__name__
        if self.levels == 1:
            if n_coarse_patches is not None:
                raise ValueError(
                    f"This {name} has levels=1 and draws no coarse starts, got "
                    f"n_coarse_patches={n_coarse_patches}. Build it with levels=2 "
                    "(e.g. make_patcher(name, levels=2)) for two-level patching."
                )
            return
        if n_coarse_patches is None:
            raise ValueError(
                f"This {name} has levels=2: pass n_coarse_patches (N2, between 1 and "
                f"n_patches={n_patches}) to sample and decode."
            )
        if not 1 <= n_coarse_patches <= n_patches:
            raise ValueError(
                f"n_coarse_patches must be between 1 and n_patches={n_patches} (coarse starts "
                f"are chosen among the fine ones), got {n_coarse_patches}."
            )

    @property
    def trainable(self) -> bool:
        """Whether the patcher has parameters that GRPG should train."""
        return any(p.requires_grad for p in self.parameters())

    def freeze(self) -> "Patcher":
        """Stop training this patcher (a foundation patcher used zero-shot)."""
        self.requires_grad_(False)
        return self


def _fixed(starts: Tensor, coarse_starts: Tensor | None = None) -> Patching:
    """A patching chosen by a rule: zero log-probability and entropy."""
    rows, group = starts.shape[:2]
    zeros = torch.zeros(rows, group, device=starts.device)
    return Patching(starts=starts, log_prob=zeros, entropy=zeros[:, 0], kl=zeros[:, 0],
                    coarse_starts=coarse_starts)


class _DilatedBlock(nn.Module):
    def __init__(self, channels: int, kernel_size: int, dilation: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(
            channels, channels, kernel_size, dilation=dilation, padding="same",
            padding_mode="replicate",
        )
        self.norm = nn.GroupNorm(1, channels)

    def forward(self, h: Tensor) -> Tensor:
        return h + _replicate_conv(self.conv, F.gelu(self.norm(h)))  # (R, hidden, L)


def _replicate_conv(conv: nn.Conv1d, x: Tensor) -> Tensor:
    """``conv(x)`` for a ``padding="same"``, ``padding_mode="replicate"`` conv, without the pad.

    PyTorch pads such a conv with a separate ``replication_pad1d`` that copies the whole input
    (a fifth of the patcher's time on the CPU). Here the conv pads with zeros inside its own
    kernel, and each tap that reads past an edge gets what replication would have given it
    there: ``W_j @ x[..., 0]`` (or ``x[..., -1]``) added to the positions where it is out of
    range. The result equals ``conv(x)`` up to float rounding.

    Parameters
    ----------
    conv
        A 1-D conv with an odd kernel, ``padding="same"`` and ``padding_mode="replicate"``.
    x
        ``(R, C_in, L)``.

    Returns
    -------
    Tensor
        ``(R, C_out, L)``.
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


class LearnedPatcher(Patcher):
    """ReinPatch's patcher: a non-causal dilated 1-D conv stack and a boundary policy.

    The conv stack reads the normalised series and its first difference (receptive field
    ``1 + (kernel_size - 1) * (2**n_layers - 1)`` steps) and gives one score per position; the
    policy (:mod:`~reinpatch_forecast.nn.policies`) turns the scores into patchings. No
    parameter depends on ``L``, on the channels or on the dataset, so one trained patcher
    serves any series.

    Parameters
    ----------
    policy
        ``"density"`` (the default: resolution reallocated across the window), ``"offset"``
        (boundaries move a few steps around the uniform grid) or ``"topk"`` (the first
        policy, kept as an ablation). With ``"offset"`` and ``"density"`` the score heads are
        zero-initialised, so a new patcher decodes exactly the uniform grid.
    hidden_size
        Width of the conv stack.
    n_layers
        Residual blocks; block ``i`` has dilation ``2**i``.
    kernel_size
        Odd kernel size of every conv.
    levels
        1, or 2 for a second, coarser set of starts nested in the first (a second score head,
        ``coarse_output``, on the same conv stack).
    offset_penalty
        ``kappa`` of the offset policy (and of every policy's coarse offsets but top-k's).
    density_sigma, density_knots, min_length
        Exploration scale, cells per grid patch and shortest patch of the density policy.

    Notes
    -----
    Two levels are drawn in sequence within one draw: the fine starts, then the coarse starts
    among that draw's fine starts. A draw's ``log_prob`` is the sum of both levels' exact
    log-probabilities; ``entropy`` and ``kl`` are the sums over levels (the coarse terms
    averaged over the draws, whose candidate sets differ).
    """

    def __init__(self, policy: str = DEFAULT_POLICY, hidden_size: int = 32, n_layers: int = 4,
                 kernel_size: int = 3, levels: int = 1, offset_penalty: float = 1.0,
                 density_sigma: float = 0.5, density_knots: int = 4,
                 min_length: int = 2) -> None:
        super().__init__()
        levels = _check_levels(levels)
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be a positive odd integer, got {kernel_size}.")
        if hidden_size < 1 or n_layers < 0:
            raise ValueError("hidden_size must be >= 1 and n_layers >= 0.")
        self.policy_name = policy
        self.policy = make_policy(policy, offset_penalty=offset_penalty,
                                  density_sigma=density_sigma, density_knots=density_knots,
                                  min_length=min_length)
        self.hidden_size = hidden_size
        self.n_layers = n_layers
        self.kernel_size = kernel_size
        self.offset_penalty = float(offset_penalty)
        self.density_sigma = float(density_sigma)
        self.density_knots = int(density_knots)
        self.min_length = int(min_length)
        self.input_proj = nn.Conv1d(2, hidden_size, kernel_size, padding="same",
                                    padding_mode="replicate")
        self.blocks = nn.ModuleList(
            _DilatedBlock(hidden_size, kernel_size, 2**i) for i in range(n_layers)
        )
        self.output = nn.Conv1d(hidden_size, 1, 1)
        self.levels = levels
        if levels == 2:
            self.coarse_output = nn.Conv1d(hidden_size, 1, 1)
        if self.policy.zero_init:
            # A zero score is the reference policy: the patcher starts at the uniform grid and
            # moves a boundary only once the reward has paid for it.
            for head in (self.output, getattr(self, "coarse_output", None)):
                if head is not None:
                    nn.init.zeros_(head.weight)
                    nn.init.zeros_(head.bias)

    def config(self) -> dict:
        """The constructor arguments (what :func:`~reinpatch_forecast.foundation.patcher_state`
        stores)."""
        return {
            "policy": self.policy_name, "hidden_size": self.hidden_size,
            "n_layers": self.n_layers, "kernel_size": self.kernel_size, "levels": self.levels,
            "offset_penalty": self.offset_penalty, "density_sigma": self.density_sigma,
            "density_knots": self.density_knots, "min_length": self.min_length,
        }

    def _project_input(self, inputs: Tensor) -> Tensor:
        """``self.input_proj(inputs)`` as one matrix product, ``(R, hidden, L)`` from ``(R, 2, L)``.

        The same convolution (replicate padding, same weights), but oneDNN's kernel for two
        input channels is about ten times slower than a product with the ``2 * kernel_size``
        shifted copies of the input.
        """
        rows, channels, length = inputs.shape
        half = self.kernel_size // 2
        padded = F.pad(inputs, (half, half), mode="replicate")  # (R, 2, L + k - 1)
        # taps[r, c, j, t] = padded[r, c, t + j]: what tap j of the kernel reads at step t
        taps = padded.unfold(-1, length, 1)  # (R, 2, k, L)
        taps = taps.reshape(rows, channels * self.kernel_size, length)  # (R, 2k, L)
        weight = self.input_proj.weight.reshape(self.hidden_size, -1)  # (hidden, 2k)
        return torch.matmul(weight, taps) + self.input_proj.bias.unsqueeze(-1)  # (R, hidden, L)

    def _features(self, x: Tensor) -> Tensor:
        """Activated features of the conv stack, ``(R, hidden, L)`` from ``x`` ``(R, L)``."""
        step = F.pad(x[:, 1:] - x[:, :-1], (1, 0))  # (R, L): the jump into each position
        h = self._project_input(torch.stack([x, step], dim=1))  # (R, hidden, L)
        for block in self.blocks:
            h = block(h)  # (R, hidden, L)
        return F.gelu(h)  # (R, hidden, L)

    #: Most elements of one ``(rows, hidden, L)`` activation of the conv stack before the rows
    #: are split into chunks (CPU only). The stack makes about twenty passes over each
    #: activation; a 1 MiB chunk stays in the cache between them, and none of its tensors is
    #: large enough for glibc to serve it with a fresh, page-faulting ``mmap``. This halves
    #: the patcher's time at ``R = 1792`` rows (a prediction batch of 256 windows x 7 channels).
    chunk_elements: int = 2**18

    def _row_chunks(self, x: Tensor) -> list[slice] | None:
        """Row slices of ``x`` ``(R, L)`` for a chunked conv pass; ``None``: one pass."""
        rows, length = x.shape
        chunk = max(1, self.chunk_elements // (self.hidden_size * length))
        if x.device.type != "cpu" or chunk >= rows:
            return None
        return [slice(i, i + chunk) for i in range(0, rows, chunk)]

    def _fine_logits(self, x: Tensor) -> Tensor:
        return self.output(self._features(x)).squeeze(1)  # (R, L)

    def logits(self, x: Tensor) -> Tensor:
        """One (level-1) score per position, ``(R, L)`` from ``x`` ``(R, L)``.

        Every row is computed on its own (the conv stack runs along time only), so long
        inputs run in chunks of rows (see :attr:`chunk_elements`) with the same result.
        """
        chunks = self._row_chunks(x)
        if chunks is None:
            return self._fine_logits(x)  # (R, L)
        return torch.cat([self._fine_logits(x[part]) for part in chunks], dim=0)  # (R, L)

    def _both_logits(self, x: Tensor) -> tuple[Tensor, Tensor]:
        h = self._features(x)  # (R, hidden, L)
        return self.output(h).squeeze(1), self.coarse_output(h).squeeze(1)  # (R, L) x 2

    def level_logits(self, x: Tensor) -> tuple[Tensor, Tensor | None]:
        """Level-1 and level-2 scores per position, ``(R, L)`` each, from one conv pass.

        The level-2 scores are ``None`` for a ``levels=1`` patcher.
        """
        if self.levels == 1:
            return self.logits(x), None
        chunks = self._row_chunks(x)
        if chunks is None:
            return self._both_logits(x)
        fine, coarse = zip(*(self._both_logits(x[part]) for part in chunks))
        return torch.cat(fine, dim=0), torch.cat(coarse, dim=0)  # (R, L) x 2

    def _draw(self, scores: tuple[Tensor, Tensor | None], n_patches: int,
              n_coarse_patches: int | None, group: int, sample: bool,
              generator: torch.Generator | None = None) -> Patching:
        fine_scores, coarse_scores = scores
        fine = self.policy.draw(fine_scores, n_patches, group, sample, generator)  # (R, G, N)
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
        return self._draw(self.level_logits(x), n_patches, n_coarse_patches, group_size, True)

    def decode(self, x: Tensor, n_patches: int,
               n_coarse_patches: int | None = None) -> Patching:
        self._check_budgets(n_patches, n_coarse_patches)
        return self._draw(self.level_logits(x), n_patches, n_coarse_patches, 1, False)

    def explore(self, x: Tensor, n_patches: int, group_size: int,
                n_coarse_patches: int | None = None,
                generator: torch.Generator | None = None) -> tuple[Patching, Patching]:
        """The decoded patching and ``group_size`` sampled ones, from one pass of the conv stack.

        The samples' noise comes from ``generator`` (default: torch's global generator).

        Returns
        -------
        tuple of Patching
            The decode (``G = 1``; its ``kl`` and ``entropy`` are the policy's, with
            gradients) and the samples (``G = group_size``; ``log_prob`` with gradients).
        """
        self._check_budgets(n_patches, n_coarse_patches)
        scores = self.level_logits(x)
        decoded = self._draw(scores, n_patches, n_coarse_patches, 1, False)
        return decoded, self._draw(scores, n_patches, n_coarse_patches, group_size, True,
                                   generator)


class _FixedRule(Patcher):
    """A deterministic rule without parameters: decoding is drawing one patching."""

    def __init__(self, levels: int = 1) -> None:
        super().__init__()
        self.levels = _check_levels(levels)

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
        self.levels = _check_levels(levels)

    def _draw(self, rows: int, group: int, length: int, n_patches: int,
              generator: torch.Generator | None, device: torch.device,
              n_coarse_patches: int | None = None) -> tuple[Tensor, Tensor | None]:
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
        Constructor arguments of :class:`LearnedPatcher` (``policy``, sizes; ignored by the
        reference patchers).
    """
    if name == "learned":
        return LearnedPatcher(levels=levels, **learned_kwargs)
    if name == "uniform":
        return UniformPatcher(levels=levels)
    if name == "random":
        return RandomPatcher(levels=levels)
    if name == "volatility":
        return VolatilityPatcher(levels=levels)
    raise ValueError(
        f"Unknown patcher {name!r}. Use one of {', '.join(map(repr, PATCHER_NAMES))}, "
        "or a pretrained LearnedPatcher."
    )
