"""ReinPatchNetwork: a patcher and a backbone, trained jointly by GRPG.

Shape legend
------------
B : batch (windows)
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

import dataclasses
import math
from collections.abc import Callable, Iterator
from typing import Any
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..errors import ReinPatchInputError
from .backbone import Backbone
from .config import PARAM_KINDS, ReinPatchConfig
from .covariates import Covariates
from .grpg import policy_loss, self_critical_advantages
from .grid import uniform_starts
from .learned_patcher import LearnedPatcher
from .patchers import make_patcher
from .patcher_interface import Patcher, Patching, check_patcher_fits
from .revin import InstanceStats, RevIN
from .segments import patch_lengths

# ReinPatchConfig and PARAM_KINDS live in .config; re-exported so that imports from
# reinpatch_forecast.nn.network work too.
__all__ = ["ReinPatchConfig", "TrainingLosses", "ReinPatchNetwork", "PARAM_KINDS"]


@dataclass
class TrainingLosses:
    """Losses of one GRPG step and its diagnostics.

    Attributes
    ----------
    loss
        The tensor to minimise: its value is ``backbone_loss`` (the forecasting loss, the
        number a learning-rate finder or a progress bar should watch; the policy loss is a
        surrogate whose value says nothing and can be negative), its gradient that of
        ``backbone_loss + policy_loss``: one backward on it trains both parts (the backbone
        loss reaches only the backbone, the policy loss only the patcher). It is not finite
        when either loss is not.
    backbone_loss
        The forecasting loss of the decoded patching.
    policy_loss
        ``-mean(A * log pi) + kl_coef * mean(KL)`` (0 when the patcher is not trained).
    prediction
        ``(B, H, C, Q)``: the forecast of the decoded patching (with gradients), for metrics.
    mean_reward
        Mean reward of the decoded patching over the scored rows (``-loss``; detached).
    advantage
        Mean advantage of the samples over the decode (detached; > 0: exploring pays).
    kl, entropy
        Mean KL to the reference policy over the scored rows (the term the policy loss
        weighs by ``kl_coef``) and mean entropy over every row (detached).
    mean_patch_length, patch_length_std, grid_shift
        Statistics of the decoded patching: mean and within-series spread of the patch
        lengths (the mean is ``L / N`` under the exact budget), and the mean distance of a
        start from the uniform grid's.
    """

    loss: Tensor
    backbone_loss: Tensor
    policy_loss: Tensor
    prediction: Tensor
    mean_reward: Tensor
    advantage: Tensor
    kl: Tensor
    entropy: Tensor
    mean_patch_length: Tensor
    patch_length_std: Tensor
    grid_shift: Tensor


def _inverse_softplus(y: Tensor) -> Tensor:
    """``x`` with ``softplus(x) == y``, elementwise (``y`` clamped to ``>= 1e-8``)."""
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
    reads both, and :meth:`coarse_boundaries` gives the deterministic coarse starts next to
    :meth:`boundaries` (the fine ones).
    """

    def __init__(self, config: ReinPatchConfig, patcher: Patcher | None = None) -> None:
        super().__init__()
        self.config = config
        if patcher is not None:
            check_patcher_fits(getattr(patcher, "levels", 1), getattr(patcher, "at_most", False),
                               config.levels, config.budget)
        self.revin = RevIN(config.n_channels, affine=config.revin_affine) if config.revin else None
        self.backbone = Backbone(config)
        # Common random numbers with a uniform-patch network of the same seed: the patcher's
        # initial weights and its sampling noise come from a fork of torch's global generator,
        # so the backbone's weights, the data order and the dropout masks are those the same
        # seed gives `patcher="uniform"`. A learned patcher that keeps the grid then trains
        # exactly as uniform patches; every difference is one the patcher made.
        with torch.random.fork_rng(devices=[]):
            if patcher is None and config.patcher.name == "learned":
                patcher = LearnedPatcher(levels=config.levels, at_most=config.budget == "at_most",
                                         **config.patcher.learned_settings())
            elif patcher is None:
                patcher = make_patcher(config.patcher.name, levels=config.levels)
            self._sampling_seed = int(torch.randint(0, 2**62, (1,)))
        self.patcher = patcher
        self._generators: dict[torch.device, torch.Generator] = {}

    def sampling_generator(self, device: torch.device) -> torch.Generator:
        """The private generator of the patcher's samples on ``device`` (seeded at
        construction, so the same seed gives the same training run)."""
        generator = self._generators.get(device)
        if generator is None:
            generator = torch.Generator(device=device).manual_seed(self._sampling_seed)
            self._generators[device] = generator
        return generator

    def sampling_state(self) -> dict[str, Any]:
        """The seed of the patcher's private generator and its CPU state (a checkpoint keeps
        them, so every fit resumed from it draws the same samples)."""
        state: dict[str, Any] = {"seed": self._sampling_seed}
        cpu = self._generators.get(torch.device("cpu"))
        if cpu is not None:
            state["cpu_state"] = cpu.get_state()
        return state

    def load_sampling_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`sampling_state` gave."""
        self._sampling_seed, self._generators = int(state["seed"]), {}
        if "cpu_state" in state:
            self.sampling_generator(torch.device("cpu")).set_state(state["cpu_state"])

    def __getstate__(self) -> dict:
        # torch generators do not pickle (deepcopy, sktime's clone): a copy starts its
        # samples afresh from the seed.
        return {**super().__getstate__(), "_generators": {}}

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

    def _coarse_budget(self) -> dict:
        """``n_coarse_patches`` for a two-level patcher; nothing for one level (so a custom
        single-level patcher needs no such argument)."""
        if self.config.levels == 1:
            return {}
        return {"n_coarse_patches": self.config.n_coarse_patches}

    def _decode_starts(self, patcher_input: Tensor) -> tuple[Tensor, Tensor | None]:
        """The starts ``(R, 1, N)`` and coarse starts ``(R, 1, N2)`` (or ``None``) of the
        patcher's decode, without the log-probability, entropy and KL it also computes."""
        return self.patcher.decode_starts(patcher_input, self.config.n_patches,
                                          **self._coarse_budget())

    def _forecast(self, backbone_input: Tensor, starts: Tensor, stats: InstanceStats | None,
                  batch: int, channels: int, local: Tensor | None = None,
                  coarse_starts: Tensor | None = None,
                  covariates: Covariates | None = None) -> Tensor:
        """Forecasts ``(B, G, H, C, Q)`` of the patchings ``starts`` ``(R, G, N)``.

        ``local`` ``(R, L, d)``, ``coarse_starts`` ``(R, G, N2)`` and the rows' ``covariates``
        are passed on to :meth:`~reinpatch_forecast.nn.backbone.Backbone.forward`.
        """
        group = starts.shape[1]
        out = self.backbone(backbone_input, starts, local, coarse_starts,
                            covariates=covariates)  # (R*G, H, Q)
        out = self._denormalise(out, stats)  # (R*G, H, Q)
        if self.config.monotone_params:
            out = torch.sort(out, dim=-1).values  # (R*G, H, Q)
        out = out.reshape(batch, channels, group, *out.shape[1:])  # (B, C, G, H, Q)
        return out.permute(0, 2, 3, 1, 4)  # (B, G, H, C, Q)

    def _check_input(self, x: Tensor) -> None:
        """Raise a ``ValueError`` unless ``x`` is ``(B, L, C)`` with this network's ``L``."""
        if x.dim() != 3 or x.shape[1] != self.config.input_length:
            raise ReinPatchInputError(
                f"Expected input of shape (batch, {self.config.input_length}, channels), "
                f"got {tuple(x.shape)}."
            )

    # -- public API -------------------------------------------------------------------------
    def forward(self, x: Tensor, covariates: Covariates | None = None) -> Tensor:
        """Forecast with the patcher's deterministic boundaries.

        Parameters
        ----------
        x
            ``(B, L, C)`` lookback windows.
        covariates
            The windows' covariates (:class:`~reinpatch_forecast.nn.covariates.Covariates`),
            the kinds and widths the config names; ``None`` without.

        Returns
        -------
        Tensor
            ``(B, H, C, Q)``.
        """
        self._check_input(x)
        batch, _, channels = x.shape
        patcher_input, backbone_input, stats = self._normalise(x)
        starts, coarse_starts = self._decode_starts(patcher_input)  # (R, 1, N), (R, 1, N2)
        out = self._forecast(backbone_input, starts, stats, batch, channels,
                             coarse_starts=coarse_starts, covariates=_rows(covariates, channels))
        return out[:, 0]  # (B, H, C, Q)

    def boundaries(self, x: Tensor) -> Tensor:
        """Deterministic patch starts ``(B, C, N)`` int64 of every series of ``x`` ``(B, L, C)``.

        With two levels these are the fine (level-1) starts; see :meth:`coarse_boundaries`.
        """
        self._check_input(x)
        batch, _, channels = x.shape
        patcher_input, _, _ = self._normalise(x)
        starts, _ = self._decode_starts(patcher_input)  # (R, 1, N)
        return starts[:, 0].reshape(batch, channels, -1)  # (B, C, N)

    def coarse_boundaries(self, x: Tensor) -> Tensor:
        """Deterministic coarse (level-2) starts ``(B, C, N2)`` int64 of ``x`` ``(B, L, C)``.

        Each row is a subset of the same series' :meth:`boundaries` (the same decode, so the
        two calls agree). Raises a ``ValueError`` with one level.
        """
        if self.config.levels == 1:
            raise ReinPatchInputError(
                "coarse_boundaries needs a two-level network (levels=2); this one has levels=1. "
                "Use boundaries(x) for its patch starts."
            )
        self._check_input(x)
        batch, _, channels = x.shape
        patcher_input, _, _ = self._normalise(x)
        _, coarse = self._decode_starts(patcher_input)  # (R, 1, N2)
        return coarse[:, 0].reshape(batch, channels, -1)  # (B, C, N2)

    def _explore(self, patcher_input: Tensor, group: int,
                 sampled_rows: int | None = None) -> tuple[Patching, Patching]:
        """The decoded patching of every row and ``group`` samples of the first
        ``sampled_rows`` rows, from one pass of the patcher."""
        return self.patcher.explore(patcher_input, self.config.n_patches, group,
                                    generator=self.sampling_generator(patcher_input.device),
                                    sampled_rows=sampled_rows, **self._coarse_budget())

    def scored_rows(self, rows: int) -> int:
        """Rows (series: windows times channels) of a batch of ``rows`` whose group a GRPG step
        scores: ``ceil(scored_share * rows)``, at least one (the first rows of the batch)."""
        # round first: a share such as 0.1 times 70 rows is 7.000000000000001 in floating point
        return max(1, math.ceil(round(self.config.training.scored_share * rows, 9)))

    def training_losses(
        self,
        x: Tensor,
        y: Tensor,
        backbone_loss: Callable[[Tensor, Tensor], Tensor] | None = None,
        sample_loss: Callable[[Tensor, Tensor], Tensor] | None = None,
        group_size: int | None = None,
        covariates: Covariates | None = None,
    ) -> TrainingLosses:
        """Losses of one training step: the GRPG step.

        The patcher gives the decoded patching of every window (the one validation and
        prediction use); the backbone trains on it. The first :meth:`scored_rows` rows (series)
        of the batch also draw ``G`` samples each, and their decode and samples are scored
        together without gradients, as one group per series: group dropout gives the
        ``1 + G`` patchings of a series the same masks, so a sample's reward differs from its
        decode's only by its patching. The advantage of a sample is its reward minus the
        decode's (a self-critical baseline), scaled by the standard deviation over the scored
        series; the policy loss is ``-mean(A * log pi) + kl_coef * KL`` to the reference
        policy. What does not depend on the patching is not repeated per patching: the
        normalisation and the local features are computed once per window, the per-step skip
        and the covariate paths once per window in each of the two passes. A patcher that is
        not trained (a fixed rule, or a frozen foundation patcher) adds no policy term: the
        backbone trains on its patching (a fresh draw for ``"random"``, the decode otherwise).

        Parameters
        ----------
        x
            ``(B, L, C)`` lookback windows.
        y
            ``(B, H, C)`` targets.
        backbone_loss
            Maps the decoded forecast ``(B, H, C, Q)`` and ``y`` to the scalar training loss of
            the backbone (darts: ``_compute_loss``, with its likelihood and sample weights);
            default the mean squared error of the first parameter.
        sample_loss
            Maps forecasts ``(S, H, C, Q)`` and targets ``(S, H, C)`` to a loss per element
            ``(S, H, C)``, whose mean over the horizon is a series' negative reward; default
            the squared error of the first parameter.
        group_size
            ``G``; defaults to ``config.training.group_size``.
        covariates
            The windows' covariates, as in :meth:`forward`; the decode and every sample read
            the same ones.

        Returns
        -------
        TrainingLosses
        """
        self._check_input(x)
        if sample_loss is None:
            sample_loss = _squared_error
        if backbone_loss is None:
            def backbone_loss(prediction: Tensor, target: Tensor) -> Tensor:
                return _squared_error(prediction, target).mean()
        batch, length, channels = x.shape
        patcher_input, backbone_input, stats = self._normalise(x)
        rows = _rows(covariates, channels)
        if not self.trains_patcher:
            return self._backbone_losses(backbone_input, patcher_input, stats, y, batch,
                                         channels, rows, backbone_loss)
        group = group_size or self.config.training.group_size
        scored = self.scored_rows(batch * channels)
        decoded, samples = self._explore(patcher_input, group, scored)  # (R, 1, N), (Rs, G, N)
        local = self.backbone.local_features(backbone_input)  # (R, L, d)
        prediction = self._forecast(backbone_input, decoded.starts, stats, batch, channels,
                                    local, decoded.coarse_starts,
                                    covariates=rows)[:, 0]  # (B, H, C, Q)
        loss = backbone_loss(prediction, y)
        # rewards are constants: the group is scored without gradients
        with torch.no_grad(), self._scoring_randomness(x.device):
            forecasts = self._score_group(backbone_input, stats, local, rows, decoded, samples,
                                          scored)  # (Rs, 1+G, H, 1, Q)
        # every scored row is its own one-channel series: (Rs, 1+G, H, 1)
        targets = y.transpose(1, 2).reshape(batch * channels, 1, -1, 1)[:scored]
        targets = targets.expand(-1, group + 1, -1, -1)  # (Rs, 1+G, H, 1)
        per_element = sample_loss(forecasts.flatten(0, 1),
                                  targets.flatten(0, 1))  # (Rs*(1+G), H, 1)
        return self._grpg_losses(loss, per_element, prediction, decoded, samples, scored,
                                 group)

    @contextmanager
    def _scoring_randomness(self, device: torch.device) -> Iterator[None]:
        """Run the block (the scoring pass) with random draws (its dropout masks) from the
        patcher's private generator, leaving torch's global generator where it was.

        The global generator then advances as in a uniform-patch network of the same seed, so
        the data order and the backbone's dropout masks are that network's (common random
        numbers): a learned patcher that keeps the grid trains exactly as uniform patches.
        """
        seed = int(torch.randint(0, 2**62, (1,), device=device,
                                 generator=self.sampling_generator(device)))
        devices = [] if device.type == "cpu" else [device.index or 0]
        # fork_rng always saves the CPU generator; on the CPU it need save no accelerator's
        # (``devices=[]``; the device type is then unused and left at its default).
        device_type = "cuda" if device.type == "cpu" else device.type
        with torch.random.fork_rng(devices=devices, device_type=device_type):
            if device.type == "cpu":
                torch.default_generator.manual_seed(seed)
            else:
                torch.get_device_module(device.type).manual_seed(seed)
            yield

    def _score_group(self, backbone_input: Tensor, stats: InstanceStats | None, local: Tensor,
                     rows: Covariates | None, decoded: Patching, samples: Patching,
                     scored: int) -> Tensor:
        """Forecasts ``(Rs, 1+G, H, 1, Q)`` of the first ``Rs = scored`` rows under their
        decode (first) and their ``G`` samples, in one backbone pass; each row is scored as
        a one-channel series of its own."""
        n = scored
        starts = torch.cat([decoded.starts[:n], samples.starts], dim=1)  # (Rs, 1+G, N)
        coarse = None
        if decoded.coarse_starts is not None:
            coarse = torch.cat([decoded.coarse_starts[:n], samples.coarse_starts],
                               dim=1)  # (Rs, 1+G, N2)
        return self._forecast(backbone_input[:n], starts, _first_rows(stats, n), n, 1, local[:n],
                              coarse, covariates=_first_rows(rows, n))  # (Rs, 1+G, H, 1, Q)

    def _backbone_losses(self, backbone_input: Tensor, patcher_input: Tensor,
                         stats: InstanceStats | None, y: Tensor, batch: int, channels: int,
                         rows: Covariates | None,
                         backbone_loss: Callable[[Tensor, Tensor], Tensor]) -> TrainingLosses:
        """Losses of a step that trains the backbone alone, on the patcher's patching (a fresh
        draw for ``"random"``, the decode otherwise), with no group drawn."""
        budget = (patcher_input, self.config.n_patches)
        if isinstance(self.patcher, LearnedPatcher):
            # A frozen policy trains the backbone on the boundaries it will predict with.
            patching = self.patcher.decode(*budget, **self._coarse_budget())
        else:
            patching = self.patcher.sample(*budget, 1, **self._coarse_budget())
        prediction = self._forecast(backbone_input, patching.starts, stats, batch, channels,
                                    coarse_starts=patching.coarse_starts,
                                    covariates=rows)[:, 0]
        loss = backbone_loss(prediction, y)
        zero = loss.new_zeros(())
        return self._losses(loss, zero, prediction, -loss.detach(), zero, patching, zero)

    def _grpg_losses(self, loss: Tensor, per_element: Tensor, prediction: Tensor,
                     decoded: Patching, samples: Patching, scored: int,
                     group: int) -> TrainingLosses:
        """The GRPG losses from the backbone's ``loss`` and the per-element losses
        ``(Rs*(1+G), H, 1)`` of the ``scored`` rows under their decode (first of each row's
        ``1 + G``) and their samples; the scored rows are the first ``Rs`` of ``decoded``
        ``(R, 1, N)``."""
        rewards = -per_element.detach().mean(dim=1).reshape(scored, group + 1)  # (Rs, 1+G)
        advantages = self_critical_advantages(rewards[:, 1:], rewards[:, 0])  # (Rs, G)
        policy = policy_loss(advantages, samples.log_prob, decoded.kl[:scored],
                             self.config.training.kl_coef)
        return self._losses(loss, policy.loss, prediction, rewards[:, 0].mean(),
                            (rewards[:, 1:] - rewards[:, :1]).mean(), decoded,
                            decoded.entropy.detach().mean(), kl=policy.kl)

    def _losses(self, backbone_loss: Tensor, policy: Tensor, prediction: Tensor,
                reward: Tensor, advantage: Tensor, decoded: Patching,
                entropy: Tensor, kl: Tensor | None = None) -> TrainingLosses:
        """:class:`TrainingLosses` with the statistics of the decoded patching; ``kl`` is the
        mean KL the policy loss anchors (default: that of every row of ``decoded``)."""
        length = self.config.input_length
        starts = decoded.starts[:, 0]  # (R, N)
        lengths = patch_lengths(starts, length).float()  # (R, N)
        grid = uniform_starts(length, starts.shape[-1], device=starts.device)  # (N,)
        used = starts < length  # (R, N): all True but under an at-most budget
        count = used.sum(dim=-1, keepdim=True).float()  # (R, 1)
        mean_length = lengths.sum(dim=-1, keepdim=True) / count  # (R, 1): L / n
        return TrainingLosses(
            # policy - policy.detach(): value 0 (NaN if policy is not finite), gradient policy's
            loss=backbone_loss + (policy - policy.detach()),
            backbone_loss=backbone_loss,
            policy_loss=policy,
            prediction=prediction,
            mean_reward=reward,
            advantage=advantage,
            kl=decoded.kl.detach().mean() if kl is None else kl,
            entropy=entropy,
            mean_patch_length=mean_length.mean(),
            patch_length_std=(((lengths - mean_length) ** 2 * used).sum(dim=-1, keepdim=True)
                              / count).sqrt().mean(),
            grid_shift=((starts - grid).abs().float() * used).sum() / used.sum(),
        )


def _rows(covariates: Covariates | None, channels: int) -> Covariates | None:
    """The covariates of every row (channels folded into the batch), or ``None``."""
    return None if covariates is None else covariates.rows(channels)


def _first_rows(value: InstanceStats | Covariates | None,
                n: int) -> InstanceStats | Covariates | None:
    """The first ``n`` rows of every tensor of per-row ``value`` (``None`` stays ``None``)."""
    if value is None:
        return None
    return dataclasses.replace(value, **{
        field.name: None if getattr(value, field.name) is None
        else getattr(value, field.name)[:n]
        for field in dataclasses.fields(value)})


def _squared_error(prediction: Tensor, target: Tensor) -> Tensor:
    """Squared error per element ``(S, H, C)`` of the first parameter of ``(S, H, C, Q)``."""
    return (prediction[..., 0] - target) ** 2
