"""Ablation variants of ReinPatch: what the benchmark tables compared and the package left out.

The package (``reinpatch_forecast.nn``) holds the method: the density policy, the time-aligned
``copy`` readout with its per-step skip, every token part, GRPG with a constant KL anchor. The
experiments the committed tables ran against it live here, as subclasses of the package's
classes, so that every table still reproduces from this checkout:

- policies: ``"topk"`` (the first policy: Gumbel-top-k with the Plackett-Luce log-probability)
  and ``"offset"`` (categorical offsets around the uniform grid at level 1);
- readouts: ``"profile"``, ``"interpolate"``, ``"query"`` and the ``"flatten"`` head over token
  slots, and ``readout_skip=False`` (the per-step skip switched off);
- token parts: ``use_local_mean``, ``use_resampled``, ``use_position`` and
  ``local_activation`` switched off;
- schedules: ``kl_schedule="linear"``, ``patcher_warmup`` and ``sample_loss_weight``;
- the head's span: ``head_steps`` (a head over the last steps only, for long lookbacks).

Every argument keeps the name and default the committed benchmark specs use, so those specs
run unchanged.

Entry points
------------
``make_model(**kwargs)``
    A darts model. It takes every :class:`~reinpatch_forecast.ReinPatchModel` argument plus
    the ablation arguments above under their names (``policy=``, ``readout=``,
    ``readout_skip=``, ``use_local_mean=``, ``use_resampled=``, ``use_position=``,
    ``local_activation=``, ``kl_schedule=``, ``patcher_warmup=``, ``sample_loss_weight=``,
    ``head_steps=``).
    With no ablation asked it returns the package's plain ``ReinPatchModel``; otherwise a
    :class:`VariantModel`.
``make_network(patcher=None, **config_kwargs)``
    A pure-PyTorch network (what the synthetic tasks and the speed benchmark train directly)
    from the flat fields of :class:`~reinpatch_forecast.nn.ReinPatchConfig` and the ablation
    arguments (a ``Patcher`` object as ``patcher`` is used as it is): the package's
    :class:`~reinpatch_forecast.nn.ReinPatchNetwork` when no ablation is asked, a
    :class:`VariantNetwork` otherwise.
``make_patcher(name="learned", policy="density", offset_penalty=1.0, **kwargs)``
    A learned patcher of any policy (:class:`VariantPatcher` for ``"topk"`` and ``"offset"``).

The tables' records name the commit they ran on; the GRPG step and the tokeniser's cost
changed since (the group is scored with its decode, on a share of the rows; ``local_out`` reads
patch means), so re-running a row gives the same method at float-rounding and sampling-noise
distance, not the same bytes.

Shape legend
------------
R : rows (series, channels folded into the batch)
G : patchings per row
L : lookback length
N : patches per patching; N2 coarse ones
M : candidate positions (top-k), or patchings (readouts)
P : profile points per patch
d : model width
k : features per step
H : horizon
Q : parameters per step
"""

from __future__ import annotations

import math
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, fields
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from darts.utils.serialization import add_safe_globals

from reinpatch_forecast import ReinPatchModel
from reinpatch_forecast.darts.model import _ReinPatchModule
from reinpatch_forecast.errors import ReinPatchInputError
from reinpatch_forecast.nn import (Backbone, Covariates, LearnedPatcher, Patcher, Patching,
                                   ReinPatchConfig, ReinPatchNetwork, TrainingLosses)
from reinpatch_forecast.nn.backbone import EncoderLayer, GroupDropout, PatchTokeniser
from reinpatch_forecast.nn.grid import uniform_start_values
from reinpatch_forecast.nn.policies import (BoundaryPolicy, PolicyDraw, _categorical_offsets,
                                            coarse_offsets, gumbel)
from reinpatch_forecast.nn.readout import step_patch_index
from reinpatch_forecast.nn.segments import patch_lengths, resample_patches

__all__ = ["Ablation", "VariantConfig", "VariantPatcher", "VariantTokeniser", "VariantBackbone",
           "VariantNetwork", "VariantModel", "make_model", "make_network", "make_patcher",
           "OffsetPolicy", "TopKPolicy", "plackett_luce_log_prob", "READOUTS", "STEP_READOUTS",
           "POLICY_NAMES", "KL_SCHEDULES"]

#: Every readout the benchmarks compared, the package's first.
READOUTS = ("copy", "profile", "interpolate", "query", "flatten")
#: The readouts that map the tokens onto the ``L`` steps.
STEP_READOUTS = ("copy", "profile", "interpolate")
#: The learned patcher's policies, the package's first.
POLICY_NAMES = ("density", "offset", "topk")
#: How the KL anchor's weight moves over training.
KL_SCHEDULES = ("constant", "linear")


@dataclass
class Ablation:
    """The settings that leave the package's method; the defaults are the package's.

    Attributes
    ----------
    policy
        ``"density"`` (the package's), ``"offset"`` or ``"topk"``.
    offset_penalty
        ``kappa`` of the offset policy (its level-1 and level-2 offsets).
    readout
        One of :data:`READOUTS`.
    readout_skip
        Add every step's local features to its readout features; ``None``: on for the
        step readouts when ``use_local_mean`` gives local features.
    use_local_mean, use_resampled, use_position
        Token parts: local-feature mean, resampled values, position features.
    local_activation
        GELU in the local encoder before the patch mean.
    kl_schedule
        ``"constant"`` or ``"linear"`` (from ``kl_coef`` at the first policy epoch to 0 at the
        last).
    patcher_warmup
        Epochs in which only the backbone trains, on the decode, before GRPG starts.
    sample_loss_weight
        ``w``: the backbone also trains on the samples, ``(decode + w * samples) / (1 + w)``.
    head_steps
        A time-aligned head that reads only the step features of the last ``head_steps``
        steps (``min(L, head_steps) * k`` inputs), so its size stops growing with the
        lookback; older steps reach the forecast through attention only. ``None``: all ``L``.
    """

    policy: str = "density"
    offset_penalty: float = 1.0
    readout: str = "copy"
    readout_skip: bool | None = None
    use_local_mean: bool = True
    use_resampled: bool = True
    use_position: bool = True
    local_activation: bool = True
    kl_schedule: str = "constant"
    patcher_warmup: int = 0
    sample_loss_weight: float = 0.0
    head_steps: int | None = None

    def __post_init__(self) -> None:
        if self.policy is None:
            self.policy = "density"
        if self.policy not in POLICY_NAMES:
            raise ReinPatchInputError(f"Unknown policy {self.policy!r}; use one of {POLICY_NAMES}.")
        if self.readout not in READOUTS:
            raise ReinPatchInputError(
                f"Unknown readout {self.readout!r}: use one of {', '.join(READOUTS)}.")
        if self.readout_skip is None:
            self.readout_skip = self.readout in STEP_READOUTS and self.use_local_mean
        if not isinstance(self.readout_skip, bool):
            raise ReinPatchInputError(
                f"readout_skip must be True, False or None, got {self.readout_skip!r}.")
        if self.readout_skip and self.readout not in STEP_READOUTS:
            raise ReinPatchInputError(
                f"readout_skip=True needs a time-aligned readout ({', '.join(STEP_READOUTS)}); "
                f"readout={self.readout!r} has none: set readout_skip=False.")
        if self.readout_skip and not self.use_local_mean:
            raise ReinPatchInputError(
                "readout_skip=True reads the local encoder's features, which use_local_mean=False "
                "switches off: set readout_skip=False or use_local_mean=True.")
        if not (self.use_local_mean or self.use_resampled or self.use_position):
            raise ReinPatchInputError(
                "At least one token part must be on: use_local_mean, use_resampled or "
                "use_position.")
        if self.kl_schedule not in KL_SCHEDULES:
            raise ReinPatchInputError(
                f"Unknown kl_schedule {self.kl_schedule!r}; use one of {KL_SCHEDULES}.")
        if (isinstance(self.patcher_warmup, bool) or not isinstance(self.patcher_warmup, int)
                or self.patcher_warmup < 0):
            raise ReinPatchInputError(
                f"patcher_warmup must be an integer >= 0, got {self.patcher_warmup!r}.")
        if isinstance(self.sample_loss_weight, bool) or not (
                isinstance(self.sample_loss_weight, (int, float))
                and math.isfinite(self.sample_loss_weight) and self.sample_loss_weight >= 0):
            raise ReinPatchInputError(
                f"sample_loss_weight must be a finite number >= 0, got "
                f"{self.sample_loss_weight!r}.")
        if self.head_steps is not None and (
                isinstance(self.head_steps, bool) or not isinstance(self.head_steps, int)
                or self.head_steps < 1):
            raise ReinPatchInputError(
                f"head_steps must be None or an integer >= 1, got {self.head_steps!r}.")
        if self.head_steps is not None and self.readout not in STEP_READOUTS:
            raise ReinPatchInputError(
                f"head_steps needs a time-aligned readout ({', '.join(STEP_READOUTS)}); "
                f"readout={self.readout!r} has none.")

    @property
    def is_package(self) -> bool:
        """Whether these settings are the package's method (no ablation)."""
        return self == Ablation()

    def policy_schedule(self, epoch: int, n_epochs: int | None,
                        kl_coef: float) -> tuple[bool, float]:
        """Whether the patcher trains in ``epoch`` (0-based) and the KL weight it trains with
        (``n_epochs``: the planned epochs, ``None`` if unknown)."""
        if epoch < self.patcher_warmup:
            return False, 0.0
        if self.kl_schedule == "constant" or not n_epochs:
            return True, float(kl_coef)
        policy_epochs = max(1, n_epochs - self.patcher_warmup)
        remaining = 1.0 - (epoch - self.patcher_warmup) / policy_epochs
        return True, float(kl_coef) * max(0.0, remaining)


#: The names of the ablation arguments (the fields of :class:`Ablation`).
ABLATION_NAMES = tuple(f.name for f in fields(Ablation))


@dataclass
class VariantConfig(ReinPatchConfig):
    """:class:`~reinpatch_forecast.nn.ReinPatchConfig` with an :class:`Ablation`."""

    ablation: Ablation = field(default_factory=Ablation)

    def __post_init__(self) -> None:
        if isinstance(self.ablation, dict):
            self.ablation = Ablation(**self.ablation)
        super().__post_init__()
        ablation = self.ablation
        if self.budget == "at_most" and (ablation.policy != "density"
                                         or ablation.readout not in STEP_READOUTS):
            raise ReinPatchInputError(
                f"budget='at_most' needs the density policy and a time-aligned readout "
                f"({', '.join(STEP_READOUTS)}); got policy={ablation.policy!r}, "
                f"readout={ablation.readout!r}.")


class VariantPatcher(LearnedPatcher):
    """The learned patcher under any policy of :data:`POLICY_NAMES`.

    ``"topk"`` keeps the default initialisation of its score head (zero scores would tie
    every position); ``"offset"`` and ``"density"`` start at zero, at the uniform grid.
    """

    def __init__(self, policy: str = "density", offset_penalty: float = 1.0, **kwargs) -> None:
        if policy not in POLICY_NAMES:
            raise ReinPatchInputError(f"Unknown policy {policy!r}; use one of {POLICY_NAMES}.")
        if kwargs.get("at_most") and policy != "density":
            raise ReinPatchInputError(
                f"An at-most token budget needs the density policy, got policy={policy!r}.")
        # Read by _make_policy and _init_heads, which LearnedPatcher.__init__ calls.
        object.__setattr__(self, "policy_name", policy)
        object.__setattr__(self, "offset_penalty", float(offset_penalty))
        super().__init__(**kwargs)

    def _make_policy(self) -> BoundaryPolicy:
        if self.policy_name == "offset":
            return OffsetPolicy(self.offset_penalty)
        if self.policy_name == "topk":
            return TopKPolicy()
        return super()._make_policy()

    def _init_heads(self) -> None:
        if self.policy_name != "topk":
            super()._init_heads()

    def config(self) -> dict:
        return {**super().config(), "policy": self.policy_name,
                "offset_penalty": self.offset_penalty}


def make_patcher(name: str = "learned", policy: str = "density", offset_penalty: float = 1.0,
                 levels: int = 1, **kwargs) -> Patcher:
    """A patcher by name; a learned one of any policy (``kwargs``: its sizes and settings)."""
    from reinpatch_forecast.nn import make_patcher as package_patcher

    if name != "learned":
        return package_patcher(name, levels=levels)
    if policy in (None, "density"):
        return LearnedPatcher(levels=levels, **kwargs)
    return VariantPatcher(policy=policy, offset_penalty=offset_penalty, levels=levels, **kwargs)


class VariantTokeniser(PatchTokeniser):
    """The tokeniser with its parts switched by an :class:`Ablation`."""

    def __init__(self, d_model: int, resample_points: int, ablation: Ablation) -> None:
        nn.Module.__init__(self)
        self.d_model = d_model
        self.resample_points = resample_points
        self.ablation = ablation
        if ablation.use_local_mean:
            self.local_conv = nn.Conv1d(1, d_model, 3, padding="same", padding_mode="replicate")
            self.local_out = nn.Linear(d_model, d_model)
        if ablation.use_resampled:
            self.resampled_proj = nn.Linear(resample_points, d_model)
        if ablation.use_position:
            self.position_proj = nn.Linear(4 * self.n_frequencies, d_model)

    def _local_features(self, x: Tensor) -> Tensor:
        h = self._local_conv(x)  # (R, L, d)
        return F.gelu(h) if self.ablation.local_activation else h  # (R, L, d)

    def forward(self, x: Tensor, starts: Tensor, local: Tensor | None = None) -> Tensor:
        """``(R*G, N, d)`` tokens of ``starts`` ``(R, G, N)`` over ``x`` ``(R, L)``."""
        rows, group, n_patches = starts.shape
        length = x.shape[-1]
        parts = []
        if self.ablation.use_local_mean:
            if local is None:
                local = self.local_features(x)  # (R, L, d)
            parts.append(self.local_tokens(local, starts))  # (R, G, N, d)
        if self.ablation.use_resampled:
            values = resample_patches(x, starts, self.resample_points)  # (R, G, N, P)
            parts.append(self.resampled_proj(values))  # (R, G, N, d)
        if self.ablation.use_position:
            position = self.position_features(starts, length)  # (R, G, N, 4F)
            parts.append(self.position_proj(position.to(x.dtype)))  # (R, G, N, d)
        tokens = parts[0]
        for part in parts[1:]:
            tokens = tokens + part  # (R, G, N, d)
        return tokens.reshape(rows * group, n_patches, self.d_model)  # (R*G, N, d)


class VariantBackbone(Backbone):
    """The backbone under an :class:`Ablation`: any readout, the skip and token parts switched.

    Its modules are built in the order the package's backbone builds them, so a seed gives
    the package's weights wherever the two share a module.
    """

    def __init__(self, config: VariantConfig, ablation: Ablation) -> None:
        nn.Module.__init__(self)
        self.config = config
        self.ablation = ablation
        sizes = config.backbone
        d = sizes.d_model
        self.n_patches = config.n_patches
        self.n_coarse_patches = config.n_coarse_patches
        self.variable_tokens = config.budget == "at_most"
        self.time_aligned = ablation.readout in STEP_READOUTS
        self.tokeniser = VariantTokeniser(d, sizes.resample_points, ablation)
        self.layers = nn.ModuleList(
            EncoderLayer(d, sizes.n_heads, sizes.ff_multiplier * d, sizes.dropout)
            for _ in range(sizes.n_layers))
        self.final_norm = nn.LayerNorm(d)
        self.dropout = GroupDropout(sizes.dropout)
        n_tokens = self.n_patches
        if self.n_coarse_patches is not None:
            self.coarse_layers = nn.ModuleList(
                EncoderLayer(d, sizes.n_heads, sizes.ff_multiplier * d, sizes.dropout)
                for _ in range(sizes.n_layers))
            self.coarse_norm = nn.LayerNorm(d)
            if ablation.use_position:
                self.coarse_position_proj = nn.Linear(4 * PatchTokeniser.n_frequencies, d)
            n_tokens += self.n_coarse_patches
        outputs = config.output_length * config.nr_params
        if self.time_aligned:
            width = config.step_width
            self.step_readout = VariantStepReadout(ablation.readout, d, sizes.resample_points,
                                                   width)
            if self.n_coarse_patches is not None:
                self.coarse_step_readout = VariantStepReadout(ablation.readout, d,
                                                              sizes.resample_points, width)
            if ablation.readout_skip:
                self.skip_projection = nn.Linear(d, width)
            self.head_steps = min(config.input_length, ablation.head_steps
                                  or config.input_length)
            self.head = nn.Linear(self.head_steps * width, outputs)
        elif ablation.readout == "query":
            self.query_readout = HorizonQueryReadout(d, sizes.n_heads, config.output_length,
                                                     config.nr_params)
        else:
            self.head = nn.Linear(n_tokens * d, outputs)
        self.covariates = None
        if config.uses_covariates:
            from reinpatch_forecast.nn.covariates import CovariateEmbedding
            self.covariates = CovariateEmbedding(
                config.n_past_covariates, config.n_future_covariates,
                config.n_static_covariates, d, config.nr_params)

    def local_features(self, x: Tensor) -> Tensor | None:
        """Per-step features ``(R, L, d)``, or ``None`` without the local-mean part."""
        return self.tokeniser.local_features(x) if self.ablation.use_local_mean else None

    def _coarse_tokens(self, fine: Tensor, x: Tensor, starts: Tensor,
                       coarse_starts: Tensor) -> Tensor:
        if self.ablation.use_position:
            return super()._coarse_tokens(fine, x, starts, coarse_starts)
        from reinpatch_forecast.nn.segments import coarse_token_starts, pool_tokens
        rows, group, n_coarse = coarse_starts.shape
        token_starts = coarse_token_starts(starts, coarse_starts)  # (R, G, N2)
        return pool_tokens(fine, token_starts.reshape(rows * group, n_coarse))  # (R*G, N2, d)

    def chunk_rows(self, rows: int, group: int, length: int, with_local: bool = True) -> int:
        from reinpatch_forecast.nn.chunking import rows_per_chunk
        config, sizes = self.config, self.config.backbone
        n_tokens = max(self.n_patches, self.n_coarse_patches or 0)
        per_row = group * n_tokens * sizes.d_model * max(sizes.ff_multiplier, 1)
        if self.time_aligned:
            per_row = max(per_row, group * length * config.step_width)
        if self.ablation.readout == "query":
            per_row = max(per_row, group * config.output_length * sizes.d_model)
        if with_local and self.ablation.use_local_mean:
            per_row = max(per_row, length * sizes.d_model)
        return rows_per_chunk(self.chunk_elements, per_row)

    def _step_features(self, tokens: Tensor, coarse: Tensor | None, starts: Tensor,
                       coarse_starts: Tensor | None, local: Tensor | None) -> Tensor:
        """The step features the head reads, ``(R*G, min(L, head_steps), k)``: those of the
        last ``head_steps`` steps (all ``L`` without the ablation)."""
        rows, group, n_patches = starts.shape
        length = self.config.input_length
        steps = self.step_readout(tokens, starts.reshape(rows * group, n_patches), length)
        if coarse is not None:
            steps = steps + self.coarse_step_readout(
                coarse, coarse_starts.reshape(rows * group, -1), length)  # (R*G, L, k)
        if self.ablation.readout_skip:
            skip = self.skip_features(local)  # (R, L, k)
            steps = (steps.reshape(rows, group, length, -1) + skip.unsqueeze(1)).flatten(0, 1)
        return steps[:, -self.head_steps:]  # (R*G, min(L, head_steps), k)

    def _read(self, tokens: Tensor, coarse: Tensor | None, starts: Tensor,
              coarse_starts: Tensor | None, local: Tensor | None) -> Tensor:
        group = starts.shape[1]
        if self.ablation.readout == "query":
            if coarse is not None:
                tokens = torch.cat([tokens, coarse], dim=1)  # (R*G, N+N2, d)
            read = self.dropout(self.query_readout.attend(tokens), group)  # (R*G, H, d)
            return self.query_readout(read)  # (R*G, H, Q)
        if self.time_aligned:
            return super()._read(tokens, coarse, starts, coarse_starts, local)
        flat = tokens.flatten(1)  # (R*G, N*d)
        if coarse is not None:
            flat = torch.cat([flat, coarse.flatten(1)], dim=1)  # (R*G, (N+N2)*d)
        return self.head(self.dropout(flat, group))  # (R*G, H*Q)


class VariantNetwork(ReinPatchNetwork):
    """:class:`~reinpatch_forecast.nn.ReinPatchNetwork` under an :class:`Ablation`
    (``config.ablation`` of a :class:`VariantConfig`).

    Its GRPG step follows the ablation's schedule: ``schedule_epoch`` (the current epoch and
    the planned number, set by :class:`VariantModel`'s module) picks whether the patcher
    trains and with which KL weight; with ``sample_loss_weight > 0`` the backbone also trains
    on the samples.
    """

    #: ``(epoch, planned epochs or None)`` of the training step.
    schedule_epoch: tuple[int, int | None] = (0, None)

    @staticmethod
    def _make_backbone(config: VariantConfig) -> Backbone:
        return VariantBackbone(config, config.ablation)

    @staticmethod
    def _make_patcher(config: VariantConfig) -> Patcher:
        if config.patcher.name != "learned":
            return ReinPatchNetwork._make_patcher(config)
        return VariantPatcher(policy=config.ablation.policy,
                              offset_penalty=config.ablation.offset_penalty,
                              levels=config.levels, at_most=config.budget == "at_most",
                              **config.patcher.learned_settings())

    #: ``(train_patcher, kl_coef)`` of the GRPG step in progress (``None`` between steps).
    _step_schedule: tuple[bool, float] | None = None

    @property
    def trains_patcher(self) -> bool:
        trains = super().trains_patcher
        return trains if self._step_schedule is None else trains and self._step_schedule[0]

    def training_losses(self, x: Tensor, y: Tensor,
                        backbone_loss: Callable[[Tensor, Tensor], Tensor] | None = None,
                        sample_loss: Callable[[Tensor, Tensor], Tensor] | None = None,
                        group_size: int | None = None, covariates: Covariates | None = None,
                        train_patcher: bool | None = None,
                        kl_coef: float | None = None) -> TrainingLosses:
        """The package's GRPG step under the ablation's schedule and sample-loss weight;
        ``train_patcher`` and ``kl_coef`` override the schedule."""
        scheduled, anchor = self.config.ablation.policy_schedule(*self.schedule_epoch,
                                                                 self.config.training.kl_coef)
        self._step_schedule = (scheduled if train_patcher is None else train_patcher,
                               anchor if kl_coef is None else kl_coef)
        try:
            return super().training_losses(x, y, backbone_loss, sample_loss, group_size, covariates)
        finally:
            self._step_schedule = None

    def _grpg_losses(self, loss: Tensor, per_element: Tensor, prediction: Tensor,
                     decoded: Patching, samples: Patching, batch: int, channels: int,
                     group: int, kl_coef: float) -> TrainingLosses:
        if self._step_schedule is not None:
            kl_coef = self._step_schedule[1]
        return super()._grpg_losses(loss, per_element, prediction, decoded, samples, batch,
                                    channels, group, kl_coef)

    def _scoring_mode(self) -> AbstractContextManager:
        """With ``sample_loss_weight > 0`` the backbone also trains on the scored samples."""
        weight = self.config.ablation.sample_loss_weight
        return torch.set_grad_enabled(weight > 0 and torch.is_grad_enabled())

    def _step_loss(self, loss: Tensor, per_element: Tensor, scored: int, group: int) -> Tensor:
        weight = self.config.ablation.sample_loss_weight
        if weight == 0:
            return loss
        sampled_loss = per_element.reshape(scored, group + 1, -1)[:, 1:].mean()
        return (loss + weight * sampled_loss) / (1 + weight)


def config_values(values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Flat configuration keywords (the names the benchmark specs use) as nested
    :class:`~reinpatch_forecast.nn.ReinPatchConfig` keywords, and the ablation's."""
    values = dict(values)
    ablation = {name: values.pop(name) for name in ABLATION_NAMES if name in values}
    backbone = {name: values.pop(name) for name in ("d_model", "n_heads", "n_layers",
                                                    "ff_multiplier", "dropout", "resample_points",
                                                    "step_width")
                if name in values}
    patcher = {new: values.pop(old) for old, new in (("patcher_hidden_size", "hidden_size"),
                                                     ("patcher_layers", "n_layers"),
                                                     ("patcher_kernel_size", "kernel_size"))
               if old in values}
    options = dict(values.pop("patcher_options", None) or {})
    options.pop("at_most", None)
    if "offset_penalty" in options:
        ablation["offset_penalty"] = options.pop("offset_penalty")
    patcher.update(options)
    if isinstance(values.get("patcher"), str):
        patcher["name"] = values.pop("patcher")
    training = {name: values.pop(name) for name in ("group_size", "kl_coef", "scored_share")
                if name in values}
    values.update(backbone=backbone, patcher=patcher, training=training)
    return values, ablation


def make_network(patcher: Patcher | str | None = None, **config_kwargs) -> ReinPatchNetwork:
    """A network from flat configuration keywords (see the module's docstring).

    ``patcher`` is a patcher's name or a :class:`~reinpatch_forecast.nn.Patcher` to use as it
    is (e.g. a pretrained one).
    """
    given = patcher if isinstance(patcher, nn.Module) else None
    if isinstance(patcher, str):
        config_kwargs["patcher"] = patcher
    values, ablation = config_values(config_kwargs)
    if Ablation(**ablation).is_package:
        return ReinPatchNetwork(ReinPatchConfig(**values), patcher=given)
    return VariantNetwork(VariantConfig(**values, ablation=ablation), patcher=given)


class _VariantModule(_ReinPatchModule):
    """The package's Lightning module holding a :class:`VariantNetwork`; it tells the network
    the epoch, for the ablation's schedule."""

    network_class = VariantNetwork
    config_class = VariantConfig

    def on_train_epoch_start(self) -> None:
        super().on_train_epoch_start()
        n_epochs = self.trainer.max_epochs
        self.network.schedule_epoch = (self.current_epoch,
                                       n_epochs if n_epochs and n_epochs > 0 else None)


class VariantModel(ReinPatchModel):
    """:class:`~reinpatch_forecast.ReinPatchModel` with the ablation arguments of
    :class:`Ablation` (under the same names); build it with :func:`make_model`."""

    lightning_module_class = _VariantModule

    def __init__(self, input_chunk_length: int, output_chunk_length: int,
                 output_chunk_shift: int = 0, policy: str | None = None,
                 offset_penalty: float = 1.0, readout: str = "copy",
                 readout_skip: bool | None = None,
                 use_local_mean: bool = True, use_resampled: bool = True,
                 use_position: bool = True, local_activation: bool = True,
                 kl_schedule: str = "constant", patcher_warmup: int = 0,
                 sample_loss_weight: float = 0.0, head_steps: int | None = None,
                 **kwargs) -> None:
        super().__init__(input_chunk_length, output_chunk_length, output_chunk_shift, **kwargs)
        given = self._frozen_patcher_state or self._init_state
        if policy is None and given is not None:
            policy = given["config"].get("policy", "density")
        self.ablation = Ablation(
            policy=policy, offset_penalty=offset_penalty, readout=readout,
            readout_skip=readout_skip, use_local_mean=use_local_mean,
            use_resampled=use_resampled, use_position=use_position,
            local_activation=local_activation, kl_schedule=kl_schedule,
            patcher_warmup=patcher_warmup, sample_loss_weight=sample_loss_weight,
            head_steps=head_steps)
        self.network_config = VariantConfig(**self.network_config.to_dict(), ablation=self.ablation)


# A saved variant model holds these classes; darts loads only allow-listed ones.
add_safe_globals([VariantModel, _VariantModule, VariantConfig, Ablation])


def make_model(**kwargs) -> ReinPatchModel:
    """A darts model from :class:`~reinpatch_forecast.ReinPatchModel`'s arguments and the
    ablation arguments (see the module's docstring): the package's plain model when no
    ablation is asked, a :class:`VariantModel` otherwise."""
    ablation = {name: kwargs.pop(name) for name in ABLATION_NAMES if name in kwargs}
    if Ablation(**ablation).is_package:
        return ReinPatchModel(**kwargs)
    return VariantModel(**kwargs, **ablation)


# -- the policies and readouts of the benchmarks ---------------------------------------------

def plackett_luce_log_prob(logits: Tensor, order: Tensor) -> Tensor:
    """Log-probability of an ordered draw without replacement from ``softmax(logits)``.

    ``log p = sum_i [ z_{a_i} - log sum_{m not in a_1..a_{i-1}} exp(z_m) ]``: the Plackett–Luce
    likelihood of the order. Gumbel-top-k samples exactly this distribution.

    Parameters
    ----------
    logits
        ``(R, M)``: one candidate set shared by the ``G`` draws of a row; or ``(R, G, M)``: a
        candidate set per draw.
    order
        ``(R, G, k)`` int64 indices into the last axis of ``logits``, distinct within a draw,
        in the order they were drawn.

    Returns
    -------
    Tensor
        ``(R, G)``.
    """
    rows, group, n_drawn = order.shape
    if n_drawn == 0:
        return logits.new_zeros(rows, group)
    if logits.dim() == 3:
        chosen = logits.gather(-1, order)  # (R, G, k)
        never_drawn = logits.scatter(-1, order, -math.inf)  # (R, G, M)
    else:
        chosen = logits.gather(1, order.reshape(rows, group * n_drawn)).reshape(order.shape)
        never_drawn = logits.unsqueeze(1).expand(rows, group, -1).scatter(-1, order, -math.inf)
    # The mass left before step i is the mass never drawn plus the mass of draws i..k-1, both
    # summed in log space: subtracting the drawn mass from the total loses all precision in
    # float32 once the policy is confident.
    log_never_drawn = torch.logsumexp(never_drawn, dim=-1, keepdim=True)  # (R, G, 1)
    log_drawn_from_i = torch.logcumsumexp(chosen.flip(-1), dim=-1).flip(-1)  # (R, G, k)
    log_remaining = torch.logaddexp(log_never_drawn, log_drawn_from_i)  # (R, G, k)
    return (chosen - log_remaining).sum(dim=-1)  # (R, G)


class OffsetPolicy(BoundaryPolicy):
    """Per-boundary categorical offsets around the uniform grid.

    Parameters
    ----------
    penalty
        ``kappa``: the logit of offset ``delta`` is lowered by ``kappa * |delta|``, so a zero
        score keeps every boundary on the grid and a boundary moves only where the score pays
        for the distance.
    """

    def __init__(self, penalty: float = 1.0) -> None:
        if not penalty >= 0:
            raise ReinPatchInputError(f"The offset penalty must be >= 0, got {penalty}.")
        self.penalty = float(penalty)

    def draw(self, scores: Tensor, n_patches: int, group: int, sample: bool,
             generator: torch.Generator | None = None) -> PolicyDraw:
        length = scores.shape[-1]
        grid = uniform_start_values(length, n_patches)  # N starts
        starts, log_prob, entropy, kl = _categorical_offsets(
            scores, grid, length, self.penalty, group if sample else 1, sample, generator
        )
        return PolicyDraw(starts=starts, log_prob=log_prob, entropy=entropy, kl=kl)

    def draw_coarse(self, coarse_scores: Tensor, starts: Tensor, n_coarse: int,
                    sample: bool, generator: torch.Generator | None = None) -> PolicyDraw:
        return coarse_offsets(coarse_scores, starts, n_coarse, self.penalty, sample, generator)


class TopKPolicy(BoundaryPolicy):
    """An ablation: ``N - 1`` starts by Gumbel-top-k over positions ``1 .. L-1``.

    The log-probability is the Plackett–Luce likelihood of the draw's order. The reference is
    the uniform softmax over positions, and the KL reported is that of the first pick,
    ``log M - entropy`` (the KL of the whole ordered draw has no closed form). Its score head
    is not zero-initialised (zero scores would tie every position); decoding takes the
    ``N - 1`` largest scores, which clusters boundaries where the scores peak.
    """

    @staticmethod
    def _top_k(candidates: Tensor, n_choose: int, group: int, sample: bool,
               generator: torch.Generator | None = None,
               ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Order ``(R, G, n_choose)``, log-probability ``(R, G)``, entropy and KL ``(R,)``."""
        log_p = torch.log_softmax(candidates, dim=-1)  # (R, [G,] M)
        entropy = -(log_p.exp() * log_p).sum(dim=-1)  # (R, [G])
        kl = math.log(candidates.shape[-1]) - entropy
        per_draw = candidates.dim() == 3
        if per_draw:
            entropy, kl = entropy.mean(dim=1), kl.mean(dim=1)
            scores = candidates.detach()  # (R, G, M)
        else:
            scores = candidates.detach().unsqueeze(1).expand(-1, group, -1)  # (R, G, M)
        if sample:
            scores = scores + gumbel(tuple(scores.shape), candidates, generator)
        # topk returns the indices in decreasing score: the order of the draw.
        order = scores.topk(n_choose, dim=-1).indices  # (R, G, n_choose)
        return order, plackett_luce_log_prob(candidates, order), entropy, kl

    def draw(self, scores: Tensor, n_patches: int, group: int, sample: bool,
             generator: torch.Generator | None = None) -> PolicyDraw:
        order, log_prob, entropy, kl = self._top_k(
            scores[:, 1:], n_patches - 1, group if sample else 1, sample, generator
        )  # position 0 always starts a patch
        positions = torch.sort(order, dim=-1).values + 1  # (R, G, k)
        return PolicyDraw(starts=F.pad(positions, (1, 0), value=0), log_prob=log_prob,
                          entropy=entropy, kl=kl)

    def draw_coarse(self, coarse_scores: Tensor, starts: Tensor, n_coarse: int,
                    sample: bool, generator: torch.Generator | None = None) -> PolicyDraw:
        rows = starts.shape[0]
        positions = starts[..., 1:]  # (R, G, k1): position 0 is a coarse start anyway
        candidates = coarse_scores.gather(1, positions.reshape(rows, -1)).reshape(
            positions.shape)  # (R, G, k1)
        order, log_prob, entropy, kl = self._top_k(candidates, n_coarse - 1, 1, sample, generator)
        chosen = positions.gather(-1, order)  # (R, G, k2)
        coarse = F.pad(torch.sort(chosen, dim=-1).values, (1, 0), value=0)  # (R, G, N2)
        return PolicyDraw(starts=coarse, log_prob=log_prob, entropy=entropy, kl=kl)


class VariantStepReadout(nn.Module):
    """Features of every time step from the encoded tokens of its patching.

    Parameters
    ----------
    mode
        One of :data:`STEP_READOUTS`.
    d_model
        ``d``.
    points
        ``P``: profile points per patch (``"profile"`` only).
    width
        ``k``: features per step.
    """

    def __init__(self, mode: str, d_model: int, points: int, width: int) -> None:
        super().__init__()
        if mode not in STEP_READOUTS:
            raise ReinPatchInputError(
                f"StepReadout reads tokens onto steps: mode must be one of {STEP_READOUTS}, "
                f"got {mode!r}."
            )
        self.mode = mode
        self.points = points
        self.width = width
        self.project = nn.Linear(d_model, (points if mode == "profile" else 1) * width)

    def forward(self, tokens: Tensor, starts: Tensor, length: int) -> Tensor:
        """Step features.

        Parameters
        ----------
        tokens
            ``(M, N, d)`` encoded tokens.
        starts
            ``(M, N)`` int64 sorted starts of their patching, ``starts[:, 0] == 0``.
        length
            ``L``.

        Returns
        -------
        Tensor
            ``(M, L, k)``: the features of step ``t`` depend only on the token of the patch
            covering ``t`` and on that patch's span (``"interpolate"``: also on the
            neighbouring patch's token and span).
        """
        rows, n_patches, _ = tokens.shape
        width = self.width
        features = self.project(tokens)  # (M, N, P*k) or (M, N, k)
        patch = step_patch_index(starts, length)  # (M, L)
        steps = torch.arange(length, device=starts.device).expand(rows, length)  # (M, L)
        if self.mode == "copy":
            return features.gather(1, patch.unsqueeze(-1).expand(-1, -1, width))  # (M, L, k)
        if self.mode == "profile":
            points = self.points
            start = starts.gather(1, patch)  # (M, L)
            span = patch_lengths(starts, length).gather(1, patch)  # (M, L)
            point = torch.div((steps - start) * points, span, rounding_mode="floor")
            index = patch * points + point.clamp(max=points - 1)  # (M, L) in [0, N*P)
            profile = features.reshape(rows, n_patches * points, width)  # (M, N*P, k)
            return profile.gather(1, index.unsqueeze(-1).expand(-1, -1, width))  # (M, L, k)
        # interpolate: between the centres of the step's patch and the neighbour on its side.
        centres = starts.to(tokens.dtype) + (patch_lengths(starts, length).to(tokens.dtype) - 1) / 2
        position = steps.to(tokens.dtype)  # (M, L)
        own_centre = centres.gather(1, patch)  # (M, L)
        after = position >= own_centre
        left = torch.where(after, patch, (patch - 1).clamp(min=0))  # (M, L)
        last = (starts < length).sum(dim=1, keepdim=True) - 1  # (M, 1): the last used patch
        right = torch.where(after, torch.minimum(patch + 1, last), patch)  # (M, L)
        left_centre, right_centre = centres.gather(1, left), centres.gather(1, right)
        gap = right_centre - left_centre
        weight = torch.where(gap > 0, (position - left_centre) / gap.clamp(min=1e-6),
                             torch.zeros_like(gap)).clamp(0.0, 1.0).unsqueeze(-1)  # (M, L, 1)

        def read(index: Tensor) -> Tensor:
            return features.gather(1, index.unsqueeze(-1).expand(-1, -1, width))  # (M, L, k)

        return read(left) * (1 - weight) + read(right) * weight  # (M, L, k)


class HorizonQueryReadout(nn.Module):
    """The forecast read from the tokens by one learned query per horizon step.

    Parameters
    ----------
    d_model, n_heads
        ``d`` and the attention heads.
    horizon
        ``H``.
    nr_params
        ``Q``.
    """

    def __init__(self, d_model: int, n_heads: int, horizon: int, nr_params: int) -> None:
        super().__init__()
        self.queries = nn.Parameter(0.02 * torch.randn(horizon, d_model))
        self.attention = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)
        self.output = nn.Linear(d_model, nr_params)

    def attend(self, tokens: Tensor) -> Tensor:
        """Per-step features ``(M, H, d)`` of tokens ``(M, N, d)``."""
        queries = self.queries.unsqueeze(0).expand(tokens.shape[0], -1, -1)  # (M, H, d)
        read = self.attention(queries, tokens, tokens, need_weights=False)[0]  # (M, H, d)
        return self.norm(read + queries)

    def forward(self, features: Tensor) -> Tensor:
        """The forecast ``(M, H, Q)`` from the features of :meth:`attend`."""
        return self.output(features)
