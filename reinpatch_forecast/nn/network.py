"""ReinPatchNetwork: a patcher and a backbone, trained jointly by GRPG.

Shape legend
------------
B : batch (windows)
Bg : windows that draw a group (``ceil(rollout_fraction * B)``; ``B`` by default)
Bs : the other windows, ``B - Bg``: one sampled draw each, backbone training only
L : lookback length
C : channels (each one a separate series: channel independence)
R : rows, ``R = B * C``
G : group size (patchings drawn per row in training)
N : patches (tokens) per patching (the fine, level-1 patches ``N1`` with two levels)
N2 : coarse (level-2) patches per patching
H : forecast horizon
Q : parameters per forecast step (``nr_params``)
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .backbone import Backbone, BackboneConfig
from .grpg import SCALE_REWARDS, policy_loss
from .patchers import PATCHER_NAMES, LearnedPatcher, Patcher, Patching, make_patcher
from .revin import InstanceStats, RevIN
from .segments import check_budget, coarse_token_budget, patch_lengths, token_budget

__all__ = ["ReinPatchConfig", "Rollout", "TrainingLosses", "ReinPatchNetwork", "PARAM_KINDS"]

#: How each forecast parameter is mapped back from the normalised scale:
#: ``"location"`` like the series itself (``* std + mean``), ``"softplus_scale"`` as a spread
#: whose consumer applies a softplus (e.g. darts' Gaussian ``sigma``): ``softplus`` is scaled by
#: ``std`` and mapped back through the inverse softplus.
PARAM_KINDS = ("location", "softplus_scale")


@dataclass
class ReinPatchConfig:
    """Configuration of :class:`ReinPatchNetwork`.

    Attributes
    ----------
    input_length
        Lookback ``L``.
    output_length
        Horizon ``H``.
    n_channels
        ``C`` (used only by the affine RevIN; the rest is channel independent).
    compression_rate
        ``R``: the token budget is ``N = ceil(L / R)`` patches for every series. With
        ``levels=2``, a pair ``(R1, R2)``: ``N1 = ceil(L / R1)`` fine patches and
        ``N2 = ceil(N1 / R2)`` coarse ones (``1 <= R2 <= N1``); e.g. ``(4, 4)`` on ``L = 96``
        gives 24 fine and 6 coarse patches.
    patcher
        ``"learned"`` (ReinPatch), ``"uniform"``, ``"random"`` or ``"volatility"``.
    group_size
        ``G``: patchings drawn per series for GRPG (>= 2 for the learned patcher).
    backbone_draws
        How many of the ``G`` draws of a series train the backbone; the others only score a
        reward, with the backbone run without gradients (much cheaper than a training pass).
        ``None``: all ``G`` (the backbone loss is the mean over the group).
    rollout_fraction
        Fraction ``f`` of the windows of a batch that draw a group for GRPG: the first
        ``ceil(f * B)`` windows draw ``G`` patchings each (rewards, advantages and the policy
        term), the other windows draw one sampled patching each and only train the backbone
        on it. ``None`` (or 1): every window draws a group. Must satisfy ``0 < f <= 1``.
        The backbone loss stays the mean over every trained forecast.
    entropy_coef
        Weight of the entropy bonus in the policy loss.
    scale_rewards
        ``"group"``, ``"batch"`` or ``"none"``
        (see :func:`~reinpatch_forecast.nn.grpg.group_advantages`).
    nr_params
        ``Q``: values per forecast step.
    param_kinds
        One entry of :data:`PARAM_KINDS` per forecast parameter; default all ``"location"``.
    monotone_params
        Sort the ``Q`` parameters of every step in increasing order (quantile outputs: no
        quantile crossing, whatever the training state).
    d_model, n_heads, n_layers, ff_multiplier, dropout, resample_points
        Backbone sizes (see :class:`~reinpatch_forecast.nn.backbone.BackboneConfig`).
    use_local_mean, use_resampled, use_position, local_activation
        Token parts, for ablations.
    patcher_hidden_size, patcher_layers, patcher_kernel_size, patcher_uniform_prior
        Sizes of the learned patcher and its uniform prior (see
        :class:`~reinpatch_forecast.nn.patchers.LearnedPatcher`).
    revin, revin_affine
        Instance normalisation of every series, and its optional affine map.
    levels
        Boundary levels: 1, or 2 for a second, coarser set of starts nested in the first
        (see :class:`~reinpatch_forecast.nn.patchers.LearnedPatcher` and
        :class:`~reinpatch_forecast.nn.backbone.Backbone`); ``compression_rate`` is then a pair.
    """

    input_length: int
    output_length: int
    n_channels: int = 1
    compression_rate: float | tuple[float, float] = 8
    patcher: str = "learned"
    group_size: int = 8
    backbone_draws: int | None = None
    rollout_fraction: float | None = None
    entropy_coef: float = 1e-3
    scale_rewards: str = "group"
    nr_params: int = 1
    param_kinds: tuple[str, ...] | None = None
    monotone_params: bool = False
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    ff_multiplier: int = 2
    dropout: float = 0.1
    resample_points: int = 8
    use_local_mean: bool = True
    use_resampled: bool = True
    use_position: bool = True
    local_activation: bool = True
    patcher_hidden_size: int = 32
    patcher_layers: int = 4
    patcher_kernel_size: int = 3
    patcher_uniform_prior: float = 0.0
    revin: bool = True
    revin_affine: bool = False
    levels: int = 1
    backbone: BackboneConfig = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._check_levels()
        check_budget(self.input_length, self.fine_compression_rate)
        if self.levels == 2:
            coarse_token_budget(self.n_patches, self.compression_rate[1])  # R2 vs N1
        if self.input_length < 2:
            raise ValueError(
                f"input_length must be >= 2 to place patch boundaries, got {self.input_length}."
            )
        if self.patcher not in PATCHER_NAMES:
            raise ValueError(
                f"Unknown patcher {self.patcher!r}; use one of {', '.join(PATCHER_NAMES)}."
            )
        if not isinstance(self.group_size, int) or self.group_size < 1:
            raise ValueError(f"group_size must be a positive integer, got {self.group_size!r}.")
        if self.patcher == "learned" and self.group_size < 2:
            raise ValueError(
                f"group_size={self.group_size} with the learned patcher: GRPG compares the draws "
                "within a group, so it needs group_size >= 2 (8 is the default)."
            )
        if self.backbone_draws is not None and not 1 <= self.backbone_draws <= self.group_size:
            raise ValueError(
                f"backbone_draws must be between 1 and group_size={self.group_size} (or None "
                f"for all draws), got {self.backbone_draws}."
            )
        if self.rollout_fraction is not None and (
            isinstance(self.rollout_fraction, bool)
            or not isinstance(self.rollout_fraction, numbers.Real)
            or not math.isfinite(self.rollout_fraction)
            or not 0 < self.rollout_fraction <= 1
        ):
            raise ValueError(
                f"rollout_fraction must be a number with 0 < rollout_fraction <= 1 (the share "
                f"of the windows of a batch that draw a GRPG group), or None for all windows; "
                f"got {self.rollout_fraction!r}."
            )
        if self.scale_rewards not in SCALE_REWARDS:
            raise ValueError(
                f"scale_rewards must be one of {SCALE_REWARDS}, got {self.scale_rewards!r}."
            )
        if self.entropy_coef < 0:
            raise ValueError(f"entropy_coef must be >= 0, got {self.entropy_coef}.")
        if self.n_channels < 1:
            raise ValueError(f"n_channels must be >= 1, got {self.n_channels}.")
        if self.param_kinds is None:
            self.param_kinds = ("location",) * self.nr_params
        self.param_kinds = tuple(self.param_kinds)
        if len(self.param_kinds) != self.nr_params or not set(self.param_kinds) <= set(PARAM_KINDS):
            raise ValueError(
                f"param_kinds must hold nr_params={self.nr_params} entries from {PARAM_KINDS}, "
                f"got {self.param_kinds}."
            )
        self.backbone = BackboneConfig(
            input_length=self.input_length,
            output_length=self.output_length,
            n_patches=self.n_patches,
            nr_params=self.nr_params,
            d_model=self.d_model,
            n_heads=self.n_heads,
            n_layers=self.n_layers,
            ff_multiplier=self.ff_multiplier,
            dropout=self.dropout,
            resample_points=self.resample_points,
            use_local_mean=self.use_local_mean,
            use_resampled=self.use_resampled,
            use_position=self.use_position,
            local_activation=self.local_activation,
            n_coarse_patches=self.n_coarse_patches,
        )

    def _check_levels(self) -> None:
        """Check ``levels`` and the form of ``compression_rate``; store a pair as a tuple."""
        if isinstance(self.levels, bool) or self.levels not in (1, 2):
            raise ValueError(
                f"levels must be 1 (one set of patch boundaries) or 2 (fine and coarse "
                f"boundaries, nested), got {self.levels!r}."
            )
        rate = self.compression_rate
        is_sequence = isinstance(rate, (tuple, list))
        if self.levels == 1:
            if is_sequence:
                raise ValueError(
                    f"compression_rate={rate!r} is a sequence but levels=1: pass one number "
                    "(e.g. compression_rate=8), or levels=2 with a pair (R1, R2)."
                )
            return
        if not is_sequence or len(rate) != 2:
            raise ValueError(
                f"levels=2 needs compression_rate=(R1, R2), a pair: N1 = ceil(L / R1) fine "
                f"patches and N2 = ceil(N1 / R2) coarse ones, e.g. (4, 4); got {rate!r}."
            )
        for value in rate:
            if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                    or not math.isfinite(value)):
                raise ValueError(
                    f"compression_rate=(R1, R2) must hold two finite numbers >= 1, got {rate!r}."
                )
        self.compression_rate = tuple(rate)

    @property
    def fine_compression_rate(self) -> float:
        """``R`` (one level) or ``R1`` (two levels): steps per fine patch on average."""
        if isinstance(self.compression_rate, tuple):
            return self.compression_rate[0]
        return self.compression_rate

    @property
    def n_patches(self) -> int:
        """Token budget ``N = ceil(L / R)``; with two levels, the fine one ``N1 = ceil(L / R1)``."""
        return token_budget(self.input_length, self.fine_compression_rate)

    @property
    def n_coarse_patches(self) -> int | None:
        """Coarse budget ``N2 = ceil(N1 / R2)`` with two levels, ``None`` with one."""
        if self.levels == 1:
            return None
        return coarse_token_budget(self.n_patches, self.compression_rate[1])

    def grouped_windows(self, batch: int) -> int:
        """``Bg = ceil(rollout_fraction * B)``: windows of a batch of ``B`` that draw a group."""
        if self.rollout_fraction is None:
            return batch
        # The tolerance keeps e.g. 0.3 * 10 (3.0000000000000004 in floats) at 3 windows.
        return min(batch, max(1, math.ceil(self.rollout_fraction * batch - 1e-9)))

    def to_dict(self) -> dict:
        """The constructor arguments, as plain Python values."""
        values = asdict(self)
        values.pop("backbone")
        return values


@dataclass
class Rollout:
    """Forecasts of ``G`` patchings of every series.

    With ``ReinPatchConfig.rollout_fraction`` below 1, only the first ``Bg`` windows of the
    batch draw a group (the fields below without ``single_`` cover those); the other ``Bs``
    windows have one sampled patching each, in the ``single_`` fields. By default ``Bg = B``
    and the ``single_`` fields are ``None``.

    Attributes
    ----------
    prediction
        ``(Bg, G, H, C, Q)`` on the scale of the input.
    log_prob
        ``(Bg, G, C)``: log-probability of each patching under the patcher.
    entropy
        ``(Bg, C)``: the patcher's entropy per series.
    starts
        ``(Bg, G, C, N)`` int64: the patchings.
    n_trained
        The first ``n_trained`` draws of every series carry gradients to the backbone; the
        others were forecast without gradients (rewards only).
    coarse_starts
        ``(Bg, G, C, N2)`` int64: the coarse starts of a two-level patching (a subset of
        ``starts`` for every ``(b, g, c)``), ``None`` with one level. ``log_prob`` and
        ``entropy`` then cover both levels.
    single_prediction
        ``(Bs, H, C, Q)``: forecasts of the windows without a group (trained, no reward);
        ``None`` when every window draws a group.
    single_starts
        ``(Bs, C, N)`` int64: their sampled patchings, or ``None``.
    single_coarse_starts
        ``(Bs, C, N2)`` int64 with two levels, else ``None``.
    """

    prediction: Tensor
    log_prob: Tensor
    entropy: Tensor
    starts: Tensor
    n_trained: int
    coarse_starts: Tensor | None = None
    single_prediction: Tensor | None = None
    single_starts: Tensor | None = None
    single_coarse_starts: Tensor | None = None

    @property
    def n_grouped(self) -> int:
        """``Bg``: windows that drew a group (the first ``Bg`` of the batch)."""
        return self.prediction.shape[0]


@dataclass
class TrainingLosses:
    """Losses of one GRPG step and its diagnostics (scalars).

    Attributes
    ----------
    loss
        ``backbone_loss + policy_loss``: one backward on it trains both parts.
    backbone_loss
        Mean forecasting loss over the trained forecasts (the first ``backbone_draws``
        patchings of every grouped window, and the one draw of every other window).
    policy_loss
        GRPG loss (0 when the patcher is not trained).
    mean_reward, advantage_std, entropy
        GRPG diagnostics (detached).
    mean_patch_length, patch_length_std
        Patch-length statistics of the draws (the mean is ``L / N`` under the exact budget).
    """

    loss: Tensor
    backbone_loss: Tensor
    policy_loss: Tensor
    mean_reward: Tensor
    advantage_std: Tensor
    entropy: Tensor
    mean_patch_length: Tensor
    patch_length_std: Tensor


def _inverse_softplus(y: Tensor) -> Tensor:
    y = y.clamp(min=1e-8)
    return y + torch.log(-torch.expm1(-y))


class ReinPatchNetwork(nn.Module):
    """ReinPatch in pure PyTorch: patcher + backbone.

    Parameters
    ----------
    config
        The configuration.
    patcher
        A patcher to use instead of the one ``config.patcher`` names (e.g. a pretrained
        :class:`~reinpatch_forecast.nn.patchers.LearnedPatcher`, frozen or not). Its
        ``levels`` must equal ``config.levels``.

    Notes
    -----
    With ``config.levels == 2`` the patcher draws fine and coarse starts (nested), the backbone
    reads both, :class:`Rollout` carries ``coarse_starts``, and :meth:`coarse_boundaries` gives
    the deterministic coarse starts next to :meth:`boundaries` (the fine ones).
    """

    def __init__(self, config: ReinPatchConfig, patcher: Patcher | None = None) -> None:
        super().__init__()
        self.config = config
        if patcher is not None and getattr(patcher, "levels", 1) != config.levels:
            raise ValueError(
                f"The patcher has levels={getattr(patcher, 'levels', 1)} but the configuration "
                f"has levels={config.levels}: build the patcher with levels={config.levels} "
                "(a levels=1 patcher draws no coarse starts)."
            )
        if patcher is None:
            patcher = make_patcher(
                config.patcher,
                levels=config.levels,
                **(
                    dict(
                        hidden_size=config.patcher_hidden_size,
                        n_layers=config.patcher_layers,
                        kernel_size=config.patcher_kernel_size,
                        uniform_prior=config.patcher_uniform_prior,
                    )
                    if config.patcher == "learned"
                    else {}
                ),
            )
        self.patcher = patcher
        self.revin = RevIN(config.n_channels, affine=config.revin_affine) if config.revin else None
        self.backbone = Backbone(config.backbone)

    # -- parameter groups -------------------------------------------------------------------
    def patcher_parameters(self) -> list[nn.Parameter]:
        """Trainable parameters of the patcher (the policy)."""
        return [p for p in self.patcher.parameters() if p.requires_grad]

    def backbone_parameters(self) -> list[nn.Parameter]:
        """Trainable parameters of everything but the patcher."""
        patcher_ids = {id(p) for p in self.patcher.parameters()}
        return [p for p in self.parameters() if p.requires_grad and id(p) not in patcher_ids]

    @property
    def trains_patcher(self) -> bool:
        """Whether training steps draw groups and train the patcher by GRPG."""
        return isinstance(self.patcher, LearnedPatcher) and self.patcher.trainable

    # -- internals --------------------------------------------------------------------------
    def _normalise(self, x: Tensor) -> tuple[Tensor, Tensor, InstanceStats | None]:
        """Fold channels and normalise: ``x`` ``(B, L, C)`` -> patcher input, backbone input."""
        batch, length, channels = x.shape
        series = x.transpose(1, 2).reshape(batch * channels, length)  # (R, L)
        if self.revin is None:
            return series, series, None
        stats = self.revin.statistics(series)
        normalised = self.revin.normalise(series, stats)  # (R, L)
        # The patcher reads the plain normalised series, so no policy gradient reaches RevIN's
        # affine parameters (which belong to the backbone).
        return normalised, self.revin.apply_affine(normalised), stats

    def _denormalise(self, out: Tensor, stats: InstanceStats | None) -> Tensor:
        """Map the backbone's ``(R*G, H, Q)`` output back to the series' scale."""
        if stats is None:
            return out
        params = []
        for q, kind in enumerate(self.config.param_kinds):
            value = out[..., q]  # (R*G, H)
            if kind == "location":
                params.append(self.revin.denormalise(value, stats))
            else:
                spread = self.revin.denormalise(F.softplus(value), stats, shift=False)
                params.append(_inverse_softplus(spread))
        return torch.stack(params, dim=-1)  # (R*G, H, Q)

    def _decode(self, patcher_input: Tensor) -> Patching:
        """The patcher's deterministic patching, at one or two levels; ``G == 1``."""
        if self.config.levels == 1:
            # The historical call, so a custom single-level patcher needs no new argument.
            return self.patcher.decode(patcher_input, self.config.n_patches)
        return self.patcher.decode(patcher_input, self.config.n_patches,
                                   n_coarse_patches=self.config.n_coarse_patches)

    def _sample(self, patcher_input: Tensor, group: int) -> Patching:
        """``group`` patchings drawn by the patcher, at one or two levels."""
        if self.config.levels == 1:
            return self.patcher.sample(patcher_input, self.config.n_patches, group)
        return self.patcher.sample(patcher_input, self.config.n_patches, group,
                                   n_coarse_patches=self.config.n_coarse_patches)

    def _forecast(self, backbone_input: Tensor, starts: Tensor, stats: InstanceStats | None,
                  batch: int, channels: int, local: Tensor | None = None,
                  coarse_starts: Tensor | None = None) -> Tensor:
        group = starts.shape[1]
        if coarse_starts is None:
            out = self.backbone(backbone_input, starts, local)  # (R*G, H, Q)
        else:
            out = self.backbone(backbone_input, starts, local, coarse_starts)  # (R*G, H, Q)
        out = self._denormalise(out, stats)  # (R*G, H, Q)
        if self.config.monotone_params:
            out = torch.sort(out, dim=-1).values  # (R*G, H, Q)
        out = out.reshape(batch, channels, group, *out.shape[1:])  # (B, C, G, H, Q)
        return out.permute(0, 2, 3, 1, 4)  # (B, G, H, C, Q)

    def _check_input(self, x: Tensor) -> None:
        if x.dim() != 3 or x.shape[1] != self.config.input_length:
            raise ValueError(
                f"Expected input of shape (batch, {self.config.input_length}, channels), "
                f"got {tuple(x.shape)}."
            )

    # -- public API -------------------------------------------------------------------------
    def forward(self, x: Tensor) -> Tensor:
        """Forecast with the patcher's deterministic boundaries.

        Parameters
        ----------
        x
            ``(B, L, C)`` lookback windows.

        Returns
        -------
        Tensor
            ``(B, H, C, Q)``.
        """
        self._check_input(x)
        batch, _, channels = x.shape
        patcher_input, backbone_input, stats = self._normalise(x)
        patching = self._decode(patcher_input)  # starts (R, 1, N)
        out = self._forecast(backbone_input, patching.starts, stats, batch, channels,
                             coarse_starts=patching.coarse_starts)
        return out[:, 0]  # (B, H, C, Q)

    def boundaries(self, x: Tensor) -> Tensor:
        """Deterministic patch starts ``(B, C, N)`` int64 of every series of ``x`` ``(B, L, C)``.

        With two levels these are the fine (level-1) starts; see :meth:`coarse_boundaries`.
        """
        self._check_input(x)
        batch, _, channels = x.shape
        patcher_input, _, _ = self._normalise(x)
        starts = self._decode(patcher_input).starts  # (R, 1, N)
        return starts[:, 0].reshape(batch, channels, -1)  # (B, C, N)

    def coarse_boundaries(self, x: Tensor) -> Tensor:
        """Deterministic coarse (level-2) starts ``(B, C, N2)`` int64 of ``x`` ``(B, L, C)``.

        Each row is a subset of the same series' :meth:`boundaries` (the same decode, so the
        two calls agree). Raises a ``ValueError`` with one level.
        """
        if self.config.levels == 1:
            raise ValueError(
                "coarse_boundaries needs a two-level network (levels=2); this one has levels=1. "
                "Use boundaries(x) for its patch starts."
            )
        self._check_input(x)
        batch, _, channels = x.shape
        patcher_input, _, _ = self._normalise(x)
        coarse = self._decode(patcher_input).coarse_starts  # (R, 1, N2)
        return coarse[:, 0].reshape(batch, channels, -1)  # (B, C, N2)

    def rollout(self, x: Tensor, group_size: int | None = None) -> Rollout:
        """Forecasts of a group of sampled patchings of every series.

        The patcher and the local encoder run once per series; the backbone runs once on all
        ``B*C*G`` patchings. A patcher that is not trained draws one patching (``G = 1``); a
        frozen learned patcher gives its deterministic patching. With
        ``config.rollout_fraction`` below 1 (and a trained patcher), only the first
        ``ceil(f * B)`` windows draw a group; the others draw one patching each (see
        :class:`Rollout`).

        Parameters
        ----------
        x
            ``(B, L, C)``.
        group_size
            ``G``; defaults to ``config.group_size``.
        """
        self._check_input(x)
        batch, _, channels = x.shape
        group = group_size or self.config.group_size
        if not self.trains_patcher:
            group = 1
        patcher_input, backbone_input, stats = self._normalise(x)
        grouped = self.config.grouped_windows(batch) if self.trains_patcher else batch
        if grouped < batch:
            return self._partial_rollout(patcher_input, backbone_input, stats, batch, channels,
                                         group, grouped)
        if isinstance(self.patcher, LearnedPatcher) and not self.trains_patcher:
            # A frozen policy trains the backbone on the boundaries it will predict with.
            patching = self._decode(patcher_input)
        else:
            patching = self._sample(patcher_input, group)
        starts = patching.starts  # (R, G, N)
        coarse = patching.coarse_starts  # (R, G, N2) or None
        group = starts.shape[1]
        n_trained = min(self.config.backbone_draws or group, group)
        if n_trained == group:
            prediction = self._forecast(backbone_input, starts, stats, batch, channels,
                                        coarse_starts=coarse)
        else:
            # Local features are shared; only the first draws are trained, the rest are scored.
            local = None
            if self.config.use_local_mean:
                local = self.backbone.tokeniser.local_features(backbone_input)  # (R, L, d)
            trained = self._forecast(
                backbone_input, starts[:, :n_trained], stats, batch, channels, local,
                coarse_starts=None if coarse is None else coarse[:, :n_trained],
            )  # (B, k, H, C, Q)
            with torch.no_grad():
                scored = self._forecast(
                    backbone_input, starts[:, n_trained:], stats, batch, channels, local,
                    coarse_starts=None if coarse is None else coarse[:, n_trained:],
                )  # (B, G-k, H, C, Q)
            prediction = torch.cat([trained, scored], dim=1)  # (B, G, H, C, Q)
        n_patches = starts.shape[-1]
        if coarse is not None:
            coarse = coarse.reshape(batch, channels, group, -1).transpose(1, 2)  # (B, G, C, N2)
        return Rollout(
            prediction=prediction,  # (B, G, H, C, Q)
            log_prob=patching.log_prob.reshape(batch, channels, group).transpose(1, 2),
            entropy=patching.entropy.reshape(batch, channels),
            starts=starts.reshape(batch, channels, group, n_patches).transpose(1, 2),
            n_trained=n_trained,
            coarse_starts=coarse,
        )

    def _partial_rollout(self, patcher_input: Tensor, backbone_input: Tensor,
                         stats: InstanceStats | None, batch: int, channels: int, group: int,
                         grouped: int) -> Rollout:
        """:meth:`rollout` when only the first ``grouped`` windows (``Bg < B``) draw a group.

        Rows are window-major (row ``b * C + c``), so the grouped windows are the first
        ``Bg * C`` rows: every split below is a slice, shapes stay static, and no Python loop
        runs over windows. The other windows draw one patching each, without gradients (no
        policy term reads it), and their forecasts join the trained ones.
        """
        rows = grouped * channels  # rows of the grouped windows
        singles = batch - grouped
        patching = self._sample(patcher_input[:rows], group)  # starts (Bg*C, G, N)
        with torch.no_grad():
            single = self._sample(patcher_input[rows:], 1)  # starts (Bs*C, 1, N)
        starts, coarse = patching.starts, patching.coarse_starts
        n_trained = min(self.config.backbone_draws or group, group)
        local = None
        if self.config.use_local_mean:
            local = self.backbone.tokeniser.local_features(backbone_input)  # (R, L, d)

        def part(value: Tensor | None, window_rows: slice) -> Tensor | None:
            return None if value is None else value[window_rows]

        def stats_of(window_rows: slice) -> InstanceStats | None:
            if stats is None:
                return None
            return InstanceStats(mean=stats.mean[window_rows], std=stats.std[window_rows])

        head, tail = slice(0, rows), slice(rows, None)
        if n_trained == 1:
            # One draw per window trains the backbone everywhere: one pass over all B windows.
            first = torch.cat([starts[:, :1], single.starts], dim=0)  # (R, 1, N)
            first_coarse = None
            if coarse is not None:
                first_coarse = torch.cat([coarse[:, :1], single.coarse_starts], dim=0)
            trained_all = self._forecast(backbone_input, first, stats, batch, channels, local,
                                         coarse_starts=first_coarse)  # (B, 1, H, C, Q)
            trained, single_prediction = trained_all[:grouped], trained_all[grouped:, 0]
        else:
            trained = self._forecast(
                backbone_input[head], starts[:, :n_trained], stats_of(head), grouped, channels,
                part(local, head), coarse_starts=part(coarse, (slice(None), slice(n_trained))),
            )  # (Bg, k, H, C, Q)
            single_prediction = self._forecast(
                backbone_input[tail], single.starts, stats_of(tail), singles, channels,
                part(local, tail), coarse_starts=single.coarse_starts,
            )[:, 0]  # (Bs, H, C, Q)
        if n_trained < group:
            with torch.no_grad():
                scored = self._forecast(
                    backbone_input[head], starts[:, n_trained:], stats_of(head), grouped,
                    channels, part(local, head),
                    coarse_starts=part(coarse, (slice(None), slice(n_trained, None))),
                )  # (Bg, G-k, H, C, Q)
            prediction = torch.cat([trained, scored], dim=1)  # (Bg, G, H, C, Q)
        else:
            prediction = trained  # (Bg, G, H, C, Q)

        def by_window(value: Tensor | None, draws: int) -> Tensor | None:
            """``(rows, draws, n)`` -> ``(windows, draws, C, n)``."""
            if value is None:
                return None
            return value.reshape(-1, channels, draws, value.shape[-1]).transpose(1, 2)

        return Rollout(
            prediction=prediction,  # (Bg, G, H, C, Q)
            log_prob=patching.log_prob.reshape(grouped, channels, group).transpose(1, 2),
            entropy=patching.entropy.reshape(grouped, channels),
            starts=by_window(starts, group),  # (Bg, G, C, N)
            n_trained=n_trained,
            coarse_starts=by_window(coarse, group),  # (Bg, G, C, N2) or None
            single_prediction=single_prediction,  # (Bs, H, C, Q)
            single_starts=by_window(single.starts, 1)[:, 0],  # (Bs, C, N)
            single_coarse_starts=(None if single.coarse_starts is None
                                  else by_window(single.coarse_starts, 1)[:, 0]),
        )

    def policy_loss_from(self, rollout: Rollout, per_sample_loss: Tensor):
        """GRPG policy loss of a rollout given the loss of every draw.

        Parameters
        ----------
        rollout
            The rollout.
        per_sample_loss
            ``(Bg, G, C)``: forecasting loss of each series under each draw (the grouped
            windows only: the others have no reward).

        Returns
        -------
        PolicyLoss
            See :class:`~reinpatch_forecast.nn.grpg.PolicyLoss`; a zero loss when the patcher
            is not trained.
        """
        batch, group, channels = per_sample_loss.shape
        rewards = -per_sample_loss.detach().transpose(1, 2).reshape(batch * channels, group)
        log_prob = rollout.log_prob.transpose(1, 2).reshape(batch * channels, group)  # (R, G)
        result = policy_loss(
            rewards, log_prob, rollout.entropy.reshape(-1),
            entropy_coef=self.config.entropy_coef,
            scale=self.config.scale_rewards,  # type: ignore[arg-type]
        )
        if not self.trains_patcher:
            result.loss = per_sample_loss.new_zeros(())
        return result

    def training_losses(
        self,
        x: Tensor,
        y: Tensor,
        group_size: int | None = None,
        elementwise_loss: Callable[[Tensor, Tensor], Tensor] | None = None,
    ) -> TrainingLosses:
        """Losses of one GRPG training step.

        Parameters
        ----------
        x
            ``(B, L, C)`` lookback windows.
        y
            ``(B, H, C)`` targets.
        group_size
            ``G``; defaults to ``config.group_size``.
        elementwise_loss
            Maps ``prediction`` ``(B, G, H, C, Q)`` and ``target`` ``(B, G, H, C)`` to a loss per
            element ``(B, G, H, C)``; default the squared error of the first parameter.

        Returns
        -------
        TrainingLosses
        """
        rollout = self.rollout(x, group_size)
        grouped, group = rollout.prediction.shape[:2]

        def loss_per_sample(prediction: Tensor, target: Tensor) -> Tensor:
            """``(b, g, H, C, Q)`` and ``(b, H, C)`` -> mean loss per series ``(b, g, C)``."""
            target = target.unsqueeze(1).expand(-1, prediction.shape[1], -1, -1)  # (b,g,H,C)
            if elementwise_loss is None:
                per_element = (prediction[..., 0] - target) ** 2  # (b, g, H, C)
            else:
                per_element = elementwise_loss(prediction, target)  # (b, g, H, C)
            return per_element.mean(dim=2)  # (b, g, C)

        per_sample = loss_per_sample(rollout.prediction, y[:grouped])  # (Bg, G, C)
        backbone_loss = per_sample[:, : rollout.n_trained].mean()
        starts = rollout.starts  # (Bg, G, C, N)
        if rollout.single_prediction is not None:
            single = loss_per_sample(rollout.single_prediction.unsqueeze(1), y[grouped:])
            # Every trained forecast weighs the same, grouped or not.
            backbone_loss = torch.cat(
                [per_sample[:, : rollout.n_trained].reshape(-1), single.reshape(-1)]
            ).mean()
            starts = torch.cat([starts.flatten(0, 2), rollout.single_starts.flatten(0, 1)])
        policy = self.policy_loss_from(rollout, per_sample)
        lengths = patch_lengths(starts, self.config.input_length).float()  # (..., N)
        return TrainingLosses(
            loss=backbone_loss + policy.loss,
            backbone_loss=backbone_loss,
            policy_loss=policy.loss,
            mean_reward=policy.mean_reward,
            advantage_std=policy.advantage_std,
            entropy=policy.entropy,
            mean_patch_length=lengths.mean(),
            patch_length_std=lengths.std(dim=-1, unbiased=False).mean(),
        )
