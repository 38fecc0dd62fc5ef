"""What every patcher returns (:class:`Patching`), the interface it implements
(:class:`Patcher`), and the names of the built-in patchers (:data:`PATCHER_NAMES`).

Shape legend
------------
R : rows (series, channels folded into the batch)
G : group size (patchings drawn per row)
L : lookback length
N : patches per row (the token budget)
N2 : coarse (level-2) patches of a two-level patching, ``N2 <= N``
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from ..errors import ReinPatchInputError

__all__ = ["PATCHER_NAMES", "BUDGETS", "Patching", "Patcher", "check_levels", "check_budget_rule",
           "check_patcher_fits"]

#: The patchers :func:`~reinpatch_forecast.nn.patchers.make_patcher` builds by name.
PATCHER_NAMES = ("learned", "uniform", "random", "volatility")

#: How the compression rate bounds the tokens: ``"exact"`` (``N`` patches for every series) or
#: ``"at_most"`` (the learned patcher also picks how many of the ``N`` slots it uses).
BUDGETS = ("exact", "at_most")


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
        With two levels, the sum over levels (see
        :class:`~reinpatch_forecast.nn.patchers.LearnedPatcher`).
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


def check_levels(levels: int) -> int:
    """``levels`` as an ``int``; a ``ValueError`` unless it is 1 or 2."""
    if isinstance(levels, bool) or levels not in (1, 2):
        raise ReinPatchInputError(
            f"levels must be 1 (one set of boundaries) or 2 (fine and coarse, nested), "
            f"got {levels!r}."
        )
    return int(levels)


def check_budget_rule(budget: str, patcher: str, levels: int) -> None:
    """Raise a ``ValueError`` unless ``budget`` is one of :data:`BUDGETS` and fits the rest.

    An at-most budget needs the learned patcher (a fixed rule always uses ``N`` patches) at
    one level (the coarse level has no unused slots to mask).
    """
    if budget not in BUDGETS:
        raise ReinPatchInputError(
            f"Unknown budget {budget!r}: use 'exact' (N patches for every series) or "
            "'at_most' (the learned patcher may use fewer)."
        )
    if budget != "at_most":
        return
    problems = []
    if patcher != "learned":
        problems.append(f"patcher={patcher!r} (a fixed rule always uses N patches)")
    if levels != 1:
        problems.append(f"levels={levels}")
    if problems:
        raise ReinPatchInputError(
            "budget='at_most' needs the learned patcher at one level; got "
            f"{', '.join(problems)}. Use budget='exact', or the learned patcher with levels=1."
        )


def check_patcher_fits(patcher_levels: int, patcher_at_most: bool, levels: int,
                       budget: str) -> None:
    """Raise a ``ValueError`` unless a given patcher (its ``levels`` and whether it was built
    for an at-most budget) fits a network of ``levels`` and ``budget``."""
    if patcher_levels != levels:
        raise ReinPatchInputError(
            f"The given patcher has levels={patcher_levels} but the model has levels={levels}: "
            "a patcher draws as many boundary levels as it was built for. Use a patcher with "
            f"levels={levels} (the shipped one has levels=1), or a new learned patcher."
        )
    if patcher_at_most != (budget == "at_most"):
        raise ReinPatchInputError(
            f"The given patcher was built for {'an at-most' if patcher_at_most else 'an exact'} "
            f"token budget, but budget={budget!r}: pass "
            f"budget={'at_most' if patcher_at_most else 'exact'!r}."
        )


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

    def decode_starts(self, x: Tensor, n_patches: int,
                      n_coarse_patches: int | None = None) -> tuple[Tensor, Tensor | None]:
        """The starts of :meth:`decode`, ``(R, 1, N)`` int64, and its coarse starts
        ``(R, 1, N2)`` (``None`` at one level), of ``x`` ``(R, L)``: what prediction reads.

        A patcher may skip the work :meth:`decode` does for training (log-probabilities, KL,
        entropy); the starts are the same.
        """
        patching = self.decode(x, n_patches, n_coarse_patches)
        return patching.starts, patching.coarse_starts

    def _check_budgets(self, n_patches: int, n_coarse_patches: int | None) -> None:
        """Raise a ``ValueError`` unless ``n_coarse_patches`` fits ``self.levels``."""
        name = type(self).__name__
        if self.levels == 1:
            if n_coarse_patches is not None:
                raise ReinPatchInputError(
                    f"This {name} has levels=1 and draws no coarse starts, got "
                    f"n_coarse_patches={n_coarse_patches}. Build it with levels=2 "
                    "(e.g. make_patcher(name, levels=2)) for two-level patching."
                )
            return
        if n_coarse_patches is None:
            raise ReinPatchInputError(
                f"This {name} has levels=2: pass n_coarse_patches (N2, between 1 and "
                f"n_patches={n_patches}) to sample and decode."
            )
        if not 1 <= n_coarse_patches <= n_patches:
            raise ReinPatchInputError(
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
