"""Patchers: the policies that choose where patches start.

Shape legend
------------
R : rows (series, channels folded into the batch)
G : group size (patchings drawn per row)
L : lookback length
N : patches per row (the token budget); ``k = N - 1`` starts are chosen, position 0 always starts
M : candidate start positions, ``M = L - 1`` (positions ``1 .. L-1``)

Every patcher maps a normalised series ``x`` ``(R, L)`` to a :class:`Patching`. Only
:class:`LearnedPatcher` has parameters, and none of them depends on ``L``, on the number of
channels or on the dataset, so one trained patcher serves any series.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = [
    "Patching",
    "Patcher",
    "LearnedPatcher",
    "UniformPatcher",
    "RandomPatcher",
    "VolatilityPatcher",
    "plackett_luce_log_prob",
    "make_patcher",
    "PATCHER_NAMES",
]

PATCHER_NAMES = ("learned", "uniform", "random", "volatility")


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
        ``(R,)``: entropy of the policy's distribution over start positions (zeros for fixed
        rules); the exploration bonus of GRPG and a diagnostic.
    """

    starts: Tensor
    log_prob: Tensor
    entropy: Tensor

    @property
    def group_size(self) -> int:
        return self.starts.shape[1]


def plackett_luce_log_prob(logits: Tensor, order: Tensor) -> Tensor:
    """Log-probability of an ordered draw without replacement from ``softmax(logits)``.

    ``log p = sum_i [ z_{a_i} - log sum_{m not in a_1..a_{i-1}} exp(z_m) ]``: the Plackett–Luce
    likelihood of the order. Gumbel-top-k samples exactly this distribution, which makes the
    REINFORCE estimator with this log-probability unbiased.

    Parameters
    ----------
    logits
        ``(R, M)``.
    order
        ``(R, G, k)`` int64 indices into the last axis of ``logits``, distinct within a draw,
        in the order they were drawn.

    Returns
    -------
    Tensor
        ``(R, G)``.
    """
    rows, group, k = order.shape
    if k == 0:
        return logits.new_zeros(rows, group)
    chosen = logits.gather(1, order.reshape(rows, group * k)).reshape(rows, group, k)  # (R, G, k)
    # The mass left before step i is the mass never drawn plus the mass of draws i..k-1. Both
    # are summed in log space: subtracting the drawn mass from the total instead loses all
    # precision in float32 once the policy is confident.
    never_drawn = logits.unsqueeze(1).expand(rows, group, -1).scatter(-1, order, -math.inf)
    log_never_drawn = torch.logsumexp(never_drawn, dim=-1, keepdim=True)  # (R, G, 1)
    log_drawn_from_i = torch.logcumsumexp(chosen.flip(-1), dim=-1).flip(-1)  # (R, G, k)
    log_remaining = torch.logaddexp(log_never_drawn, log_drawn_from_i)  # (R, G, k)
    return (chosen - log_remaining).sum(dim=-1)  # (R, G)


def _sorted_starts(order: Tensor) -> Tensor:
    """Start positions from chosen candidate indices ``(R, G, k)``: ``(R, G, k+1)``, sorted.

    Candidate ``m`` is position ``m + 1``; position 0 is prepended.
    """
    positions = torch.sort(order, dim=-1).values + 1  # (R, G, k)
    return F.pad(positions, (1, 0), value=0)  # (R, G, N)


class Patcher(nn.Module):
    """Interface of a patcher.

    Subclasses implement :meth:`sample` (``G`` patchings per row, used in training) and
    :meth:`decode` (one deterministic patching per row, used in validation and prediction).
    """

    def sample(self, x: Tensor, n_patches: int, group_size: int) -> Patching:
        """Draw ``group_size`` patchings of every row of ``x`` ``(R, L)`` into ``n_patches``."""
        raise NotImplementedError

    def decode(self, x: Tensor, n_patches: int) -> Patching:
        """The deterministic patching of every row of ``x`` ``(R, L)``; ``G == 1``."""
        raise NotImplementedError

    @property
    def trainable(self) -> bool:
        """Whether the patcher has parameters that GRPG should train."""
        return any(p.requires_grad for p in self.parameters())

    def freeze(self) -> "Patcher":
        """Stop training this patcher (a foundation patcher used zero-shot)."""
        self.requires_grad_(False)
        return self


def _fixed(starts: Tensor) -> Patching:
    """A patching chosen by a rule: zero log-probability and entropy."""
    rows, group = starts.shape[:2]
    zeros = torch.zeros(rows, group, device=starts.device)
    return Patching(starts=starts, log_prob=zeros, entropy=zeros[:, 0])


class _DilatedBlock(nn.Module):
    def __init__(self, channels: int, kernel_size: int, dilation: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(
            channels, channels, kernel_size, dilation=dilation, padding="same",
            padding_mode="replicate",
        )
        self.norm = nn.GroupNorm(1, channels)

    def forward(self, h: Tensor) -> Tensor:
        return h + self.conv(F.gelu(self.norm(h)))  # (R, hidden, L)


class LearnedPatcher(Patcher):
    """ReinPatch's policy: a non-causal dilated 1-D conv stack, one logit per position.

    It reads the normalised series and its first difference, so it sees the whole window
    (receptive field ``1 + (kernel_size - 1) * (2**n_layers - 1)`` steps). No parameter depends
    on ``L``, on the channels or on the dataset.

    Parameters
    ----------
    hidden_size
        Width of the conv stack.
    n_layers
        Residual blocks; block ``i`` has dilation ``2**i``.
    kernel_size
        Odd kernel size of every conv.
    uniform_prior
        A fixed bonus added to the logits of the uniform patching's starts (computed from ``L``
        and ``N`` at each call, so still no parameter tied to ``L``). With it, an untrained
        policy decodes to uniform patches and samples near them, and the learned logits only
        have to say where to deviate. 0 disables it.
    """

    def __init__(self, hidden_size: int = 32, n_layers: int = 4, kernel_size: int = 3,
                 uniform_prior: float = 0.0) -> None:
        super().__init__()
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be a positive odd integer, got {kernel_size}.")
        if hidden_size < 1 or n_layers < 0:
            raise ValueError("hidden_size must be >= 1 and n_layers >= 0.")
        self.hidden_size = hidden_size
        self.n_layers = n_layers
        self.kernel_size = kernel_size
        self.uniform_prior = float(uniform_prior)
        self.input_proj = nn.Conv1d(2, hidden_size, kernel_size, padding="same",
                                    padding_mode="replicate")
        self.blocks = nn.ModuleList(
            _DilatedBlock(hidden_size, kernel_size, 2**i) for i in range(n_layers)
        )
        self.output = nn.Conv1d(hidden_size, 1, 1)

    def logits(self, x: Tensor) -> Tensor:
        """One logit per position, ``(R, L)`` from ``x`` ``(R, L)``."""
        step = F.pad(x[:, 1:] - x[:, :-1], (1, 0))  # (R, L): the jump into each position
        h = self.input_proj(torch.stack([x, step], dim=1))  # (R, hidden, L)
        for block in self.blocks:
            h = block(h)  # (R, hidden, L)
        return self.output(F.gelu(h)).squeeze(1)  # (R, L)

    def _candidates(self, x: Tensor, n_patches: int) -> tuple[Tensor, Tensor]:
        logits = self.logits(x)  # (R, L)
        if self.uniform_prior:
            grid = uniform_starts(x.shape[-1], n_patches, device=x.device)  # (N,)
            prior = logits.new_zeros(x.shape[-1]).index_fill_(0, grid, self.uniform_prior)
            logits = logits + prior  # (R, L)
        candidates = logits[:, 1:]  # (R, M): position 0 always starts a patch
        log_p = torch.log_softmax(candidates, dim=-1)  # (R, M)
        entropy = -(log_p.exp() * log_p).sum(dim=-1)  # (R,)
        return candidates, entropy

    def sample(self, x: Tensor, n_patches: int, group_size: int) -> Patching:
        candidates, entropy = self._candidates(x, n_patches)  # (R, M), (R,)
        rows, n_candidates = candidates.shape
        uniform = torch.rand(rows, group_size, n_candidates, device=x.device, dtype=x.dtype)
        tiny = torch.finfo(x.dtype).tiny
        gumbel = -torch.log(-torch.log(uniform.clamp(min=tiny, max=1.0 - 1e-7)))  # (R, G, M)
        perturbed = candidates.detach().unsqueeze(1) + gumbel  # (R, G, M)
        # topk returns the indices in decreasing perturbed value: the order of the draw.
        order = perturbed.topk(n_patches - 1, dim=-1).indices  # (R, G, k)
        log_prob = plackett_luce_log_prob(candidates, order)  # (R, G)
        return Patching(starts=_sorted_starts(order), log_prob=log_prob, entropy=entropy)

    def decode(self, x: Tensor, n_patches: int) -> Patching:
        candidates, entropy = self._candidates(x, n_patches)  # (R, M), (R,)
        order = candidates.topk(n_patches - 1, dim=-1).indices.unsqueeze(1)  # (R, 1, k)
        log_prob = plackett_luce_log_prob(candidates, order)  # (R, 1)
        return Patching(starts=_sorted_starts(order), log_prob=log_prob, entropy=entropy)


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


class UniformPatcher(Patcher):
    """Fixed patches of equal size, as PatchTST (non-overlapping, stride = patch length)."""

    def decode(self, x: Tensor, n_patches: int) -> Patching:
        return self.sample(x, n_patches, 1)

    def sample(self, x: Tensor, n_patches: int, group_size: int) -> Patching:
        starts = uniform_starts(x.shape[-1], n_patches, device=x.device)  # (N,)
        return _fixed(starts.expand(x.shape[0], group_size, n_patches))  # (R, G, N)


class RandomPatcher(Patcher):
    """A uniformly random set of ``N - 1`` starts (a reference: no signal at all).

    Training draws fresh sets from torch's global generator (seeded by the caller). Decoding
    draws from a generator seeded with ``seed`` on every call, so prediction is repeatable.
    """

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.seed = seed

    def _draw(self, rows: int, group: int, length: int, n_patches: int,
              generator: torch.Generator | None, device: torch.device) -> Tensor:
        scores = torch.rand(rows, group, length - 1, generator=generator)  # (R, G, M)
        order = scores.topk(n_patches - 1, dim=-1).indices  # (R, G, k)
        return _sorted_starts(order).to(device)  # (R, G, N)

    def sample(self, x: Tensor, n_patches: int, group_size: int) -> Patching:
        return _fixed(self._draw(x.shape[0], group_size, x.shape[-1], n_patches, None, x.device))

    def decode(self, x: Tensor, n_patches: int) -> Patching:
        generator = torch.Generator().manual_seed(self.seed)
        return _fixed(self._draw(x.shape[0], 1, x.shape[-1], n_patches, generator, x.device))


class VolatilityPatcher(Patcher):
    """Start patches at the ``N - 1`` largest absolute steps ``|x_t - x_{t-1}|``.

    A TimeSqueeze/EntroPE-like heuristic. Ties (a flat series) go to the earliest positions.
    """

    def decode(self, x: Tensor, n_patches: int) -> Patching:
        return self.sample(x, n_patches, 1)

    def sample(self, x: Tensor, n_patches: int, group_size: int) -> Patching:
        jumps = (x[:, 1:] - x[:, :-1]).abs()  # (R, M)
        # stable sort keeps ties in position order, so a flat window is patched deterministically
        order = torch.sort(jumps, dim=-1, descending=True, stable=True).indices
        order = order[:, : n_patches - 1].unsqueeze(1)  # (R, 1, k)
        return _fixed(_sorted_starts(order).expand(-1, group_size, -1))  # (R, G, N)


def make_patcher(name: str, **learned_kwargs) -> Patcher:
    """Build a patcher from its name (one of :data:`PATCHER_NAMES`)."""
    if name == "learned":
        return LearnedPatcher(**learned_kwargs)
    if name == "uniform":
        return UniformPatcher()
    if name == "random":
        return RandomPatcher()
    if name == "volatility":
        return VolatilityPatcher()
    raise ValueError(
        f"Unknown patcher {name!r}. Use one of {', '.join(map(repr, PATCHER_NAMES))}, "
        "or a pretrained LearnedPatcher."
    )
