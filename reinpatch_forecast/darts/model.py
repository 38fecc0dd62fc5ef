"""ReinPatchModel: ReinPatch as a darts ``TorchForecastingModel``.

Shape legend
------------
B : batch (windows)
L : ``input_chunk_length``
C : target components (channels; each is patched as its own series)
G : ``group_size`` (patchings drawn per series in a GRPG training step)
N : patches per series, ``ceil(L / compression_rate)``
H : ``output_chunk_length``
Q : parameters per step (``likelihood.num_parameters``, 1 without a likelihood)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
import torch
from darts import TimeSeries
from darts.models.forecasting.pl_forecasting_module import PLForecastingModule, io_processor
from darts.models.forecasting.torch_forecasting_model import PastCovariatesTorchModel
from darts.utils.data.torch_datasets.utils import (
    PLModuleInput,
    PLModuleOutput,
    TorchTrainingBatch,
    TorchTrainingSample,
)
from darts.utils.likelihood_models.torch import GaussianLikelihood
from darts.utils.serialization import add_safe_globals

from ..foundation import load_patcher, patcher_from_state, patcher_state
from ..nn import PATCHER_NAMES, LearnedPatcher, ReinPatchConfig, ReinPatchNetwork
from ..nn.segments import patch_lengths
from .rewards import elementwise_loss

__all__ = ["ReinPatchModel", "PatchBoundaries"]


class _ReinPatchModule(PLForecastingModule):
    """Lightning module: greedy boundaries in ``forward``, GRPG in ``training_step``.

    Parameters
    ----------
    network_config
        Keyword arguments of :class:`~reinpatch_forecast.nn.ReinPatchConfig` (primitives only,
        so darts can store them in checkpoints).
    freeze_patcher
        Keep the patcher fixed (a foundation patcher used zero-shot).
    patcher_lr
        Learning rate of the patcher's parameter group; ``None`` uses 3x the optimizer's ``lr``.
    **kwargs
        Arguments of darts' ``PLForecastingModule``.
    """

    def __init__(
        self,
        network_config: dict[str, Any],
        freeze_patcher: bool = False,
        patcher_lr: float | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.network = ReinPatchNetwork(ReinPatchConfig(**network_config))
        if freeze_patcher:
            self.network.patcher.freeze()
        self.patcher_lr = patcher_lr

    @io_processor
    def forward(self, x_in: PLModuleInput) -> PLModuleOutput:
        x = x_in.past_target.to(self.dtype)  # (B, L, C)
        return PLModuleOutput(prediction=self.network(x))  # (B, H, C, Q)

    def training_step(self, train_batch: TorchTrainingBatch, batch_idx: int) -> torch.Tensor:
        """One GRPG step: ``G`` patchings per series, backbone loss + policy loss."""
        x = train_batch.past_target.to(self.dtype)  # (B, L, C)
        rollout = self.network.rollout(x)  # prediction (B, G, H, C, Q)
        batch, group, _, channels, _ = rollout.prediction.shape
        trained = rollout.n_trained
        # Rollouts are series-major, so the target and weights repeat each window per draw.
        target = train_batch.future_target.repeat_interleave(group, dim=0)  # (B*G, H, C)
        trained_target = train_batch.future_target.repeat_interleave(trained, dim=0)
        weight = train_batch.sample_weight
        if weight is not None:
            weight = weight.repeat_interleave(trained, dim=0)  # (B*k, H, C)
        output = PLModuleOutput(prediction=rollout.prediction[:, :trained].flatten(0, 1))
        backbone_loss = self._compute_loss(output, trained_target, self.train_criterion, weight)
        per_element = elementwise_loss(
            rollout.prediction.detach().flatten(0, 1), target, self.likelihood,
            self.train_criterion,
        )  # (B*G, H, C)
        per_sample = per_element.mean(dim=1).reshape(batch, group, channels)  # (B, G, C)
        policy = self.network.policy_loss_from(rollout, per_sample)

        size = train_batch.past_target.shape[0]
        self.log("train_loss", backbone_loss, batch_size=size, prog_bar=True, sync_dist=True)
        lengths = patch_lengths(rollout.starts, self.network.config.input_length).float()
        diagnostics = {
            "train_policy_loss": policy.loss.detach(),
            "train_reward": policy.mean_reward,
            "train_mean_patch_length": lengths.mean(),
            "train_patch_length_std": lengths.std(dim=-1, unbiased=False).mean(),
            "train_boundary_entropy": policy.entropy,
        }
        self.log_dict(diagnostics, batch_size=size, on_step=False, on_epoch=True, sync_dist=True)
        self._update_metrics(output, trained_target, self.train_metrics)
        return backbone_loss + policy.loss

    def configure_optimizers(self):
        """darts' optimizer and scheduler, with the patcher in its own parameter group."""
        optimizer_cls = self.optimizer_cls
        base_lr = self.optimizer_kwargs.get("lr", 1e-3)
        patcher_lr = self.patcher_lr if self.patcher_lr is not None else 3.0 * base_lr
        groups = [{"params": self.network.backbone_parameters()}]
        if self.network.patcher_parameters():
            groups.append({"params": self.network.patcher_parameters(), "lr": patcher_lr})

        def grouped_optimizer(params, **kwargs):
            # darts passes self.parameters(); the groups above replace them
            return optimizer_cls(groups, **kwargs)

        self.optimizer_cls = grouped_optimizer
        try:
            return super().configure_optimizers()
        finally:
            self.optimizer_cls = optimizer_cls


@dataclass
class PatchBoundaries:
    """Where the patcher cuts the last input window of a series.

    Attributes
    ----------
    time_index
        ``(L,)`` time index of the window.
    values
        ``(L, C)`` the window's values.
    starts
        ``(C, N)`` int64: start positions (0-based, into the window) of the patches, per component.
    components
        The ``C`` component names.
    """

    time_index: pd.Index
    values: np.ndarray
    starts: np.ndarray
    components: list[str]

    @property
    def n_patches(self) -> int:
        return self.starts.shape[-1]

    def start_times(self, component: int = 0) -> pd.Index:
        """Time stamps at which the patches of one component start."""
        return self.time_index[self.starts[component]]


def _as_float32(series):
    if series is None:
        return None
    if isinstance(series, TimeSeries):
        return series if series.dtype == np.float32 else series.astype(np.float32)
    return [_as_float32(s) for s in series]


class ReinPatchModel(PastCovariatesTorchModel):
    """ReinPatch: a Transformer over variable-size patches chosen by a policy trained with GRPG.

    Each target component's lookback window is cut into ``ceil(L / compression_rate)``
    contiguous patches by the *patcher*; each patch becomes a token; a pre-norm Transformer and a
    flatten head forecast ``output_chunk_length`` steps. The learned patcher is trained by Group
    Relative Policy Gradient: ``group_size`` patchings are drawn per series, the backbone runs on
    all of them, and each patching's reward is its negative loss, normalised within the group.
    Validation and prediction use the patcher's most likely boundaries.

    Parameters
    ----------
    input_chunk_length
        Lookback ``L``.
    output_chunk_length
        Horizon ``H`` of one forward pass.
    output_chunk_shift
        Steps between the end of the input and the start of the output.
    compression_rate
        Average patch length: every series gets exactly ``ceil(L / compression_rate)`` patches.
    patcher
        ``"learned"`` (ReinPatch, default), ``"uniform"`` (PatchTST-like fixed patches),
        ``"random"``, ``"volatility"`` (cut at the largest jumps), or a foundation patcher: a
        :class:`~reinpatch_forecast.nn.LearnedPatcher` or the path of one saved with
        :func:`~reinpatch_forecast.foundation.save_patcher`. A foundation patcher is frozen:
        only the backbone trains, with no group rollouts.
    group_size
        ``G``: patchings drawn per series in a training step (>= 2 for ``"learned"``).
    backbone_draws
        How many of the ``G`` draws train the backbone; the others only give the policy its
        rewards, from a forward pass without gradients. ``None``: all ``G``.
    patcher_lr
        Learning rate of the patcher; ``None`` uses 3x the optimizer's learning rate.
    entropy_coef
        Weight of the entropy bonus in the policy loss.
    scale_rewards
        Advantage normalisation: ``"group"`` (default), ``"batch"`` or ``"none"``.
    d_model, n_heads, n_layers, dropout
        Transformer sizes.
    resample_points
        Points each patch is resampled to for its shape token.
    revin_affine
        Learn a per-component affine map in the instance normalisation.
    uniform_prior
        Logit bonus of the uniform patching's starts in the learned patcher (0: none): an
        untrained policy then decodes to uniform patches and learns where to deviate.
    **kwargs
        Every argument of darts' ``TorchForecastingModel`` (``batch_size``, ``n_epochs``,
        ``likelihood``, ``loss_fn``, ``optimizer_kwargs``, ``lr_scheduler_cls``,
        ``random_state``, ``pl_trainer_kwargs``, ``save_checkpoints``, ``torch_metrics``, ...);
        see the `darts documentation
        <https://unit8co.github.io/darts/generated_api/darts.models.forecasting.torch_forecasting_model.html>`_.
        ``use_reversible_instance_norm`` is not accepted: the network normalises every series
        itself.

    Examples
    --------
    >>> from darts.utils.timeseries_generation import sine_timeseries
    >>> from reinpatch_forecast import ReinPatchModel
    >>> series = sine_timeseries(length=120, value_frequency=1 / 12)
    >>> model = ReinPatchModel(input_chunk_length=24, output_chunk_length=6, compression_rate=4,
    ...                        n_epochs=1, random_state=0,
    ...                        pl_trainer_kwargs={"enable_progress_bar": False,
    ...                                           "logger": False, "enable_model_summary": False})
    >>> model.fit(series)  # doctest: +ELLIPSIS
    ReinPatchModel(...)
    >>> model.predict(6).n_timesteps
    6
    """

    def __init__(
        self,
        input_chunk_length: int,
        output_chunk_length: int,
        output_chunk_shift: int = 0,
        compression_rate: float = 8,
        patcher: str | os.PathLike | LearnedPatcher | dict = "learned",
        group_size: int = 8,
        backbone_draws: int | None = None,
        patcher_lr: float | None = None,
        entropy_coef: float = 1e-3,
        scale_rewards: str = "group",
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        dropout: float = 0.1,
        resample_points: int = 8,
        revin_affine: bool = False,
        uniform_prior: float = 0.0,
        **kwargs,
    ) -> None:
        if kwargs.get("use_reversible_instance_norm"):
            raise ValueError(
                "ReinPatchModel normalises every series itself (RevIN inside the network); "
                "do not pass use_reversible_instance_norm. Use revin_affine=True for a learned "
                "affine map."
            )
        super().__init__(**self._extract_torch_model_params(**self.model_params))
        self.pl_module_params = self._extract_pl_module_params(**self.model_params)

        # A patcher object or file becomes a plain state (tensors and primitives), so that the
        # model pickles and darts can load it without trusting arbitrary classes.
        self._foundation_state: dict | None = None
        if isinstance(patcher, str) and patcher in PATCHER_NAMES:
            patcher_name = patcher
        else:
            if isinstance(patcher, LearnedPatcher):
                self._foundation_state = patcher_state(patcher)
            elif isinstance(patcher, dict):
                self._foundation_state = patcher
                patcher_from_state(patcher)  # validates
            elif isinstance(patcher, (str, os.PathLike)) and os.path.isfile(patcher):
                self._foundation_state = patcher_state(load_patcher(patcher))
            else:
                raise ValueError(
                    f"patcher must be one of {', '.join(map(repr, PATCHER_NAMES))}, a "
                    f"LearnedPatcher or the path of a saved patcher file; got {patcher!r}."
                )
            self.model_params["patcher"] = self._foundation_state
            patcher_name = "learned"
        self.patcher_lr = patcher_lr
        learned_sizes = (
            self._foundation_state["config"] if self._foundation_state is not None else {}
        )
        self.network_params = dict(
            input_length=input_chunk_length,
            output_length=output_chunk_length,
            compression_rate=compression_rate,
            patcher=patcher_name,
            group_size=group_size,
            backbone_draws=backbone_draws,
            entropy_coef=entropy_coef,
            scale_rewards=scale_rewards,
            d_model=d_model,
            n_heads=n_heads,
            n_layers=n_layers,
            dropout=dropout,
            resample_points=resample_points,
            revin_affine=revin_affine,
            patcher_hidden_size=learned_sizes.get("hidden_size", 32),
            patcher_layers=learned_sizes.get("n_layers", 4),
            patcher_kernel_size=learned_sizes.get("kernel_size", 3),
            patcher_uniform_prior=learned_sizes.get("uniform_prior", uniform_prior),
        )
        # Validate every argument now, not at the first fit.
        ReinPatchConfig(**self.network_params)

    # -- darts hooks ------------------------------------------------------------------------
    def _create_model(self, train_sample: TorchTrainingSample) -> torch.nn.Module:
        n_channels = train_sample.past_target.shape[1]
        nr_params = 1 if self.likelihood is None else self.likelihood.num_parameters
        if isinstance(self.likelihood, GaussianLikelihood):
            param_kinds = ("location", "softplus_scale")
        else:
            param_kinds = ("location",) * nr_params
        config = ReinPatchConfig(
            **self.network_params, n_channels=n_channels, nr_params=nr_params,
            param_kinds=param_kinds,
        )
        module = _ReinPatchModule(
            network_config=config.to_dict(),
            freeze_patcher=self._foundation_state is not None,
            patcher_lr=self.patcher_lr,
            **self.pl_module_params,
        )
        if self._foundation_state is not None:
            module.network.patcher.load_state_dict(
                patcher_from_state(self._foundation_state).state_dict()
            )
        return module

    @property
    def supports_past_covariates(self) -> bool:
        return False

    @property
    def supports_multivariate(self) -> bool:
        return True

    @property
    def supports_likelihood_parameter_prediction(self) -> bool:
        return True

    @property
    def extreme_lags(self):
        return (
            -self.input_chunk_length,
            self.output_chunk_length - 1 + self.output_chunk_shift,
            None,
            None,
            None,
            None,
            self.output_chunk_shift,
        )

    # -- public API -------------------------------------------------------------------------
    @staticmethod
    def _reject_past_covariates(*covariates) -> None:
        if any(c is not None for c in covariates):
            raise ValueError(
                "ReinPatchModel does not use past covariates: it forecasts each target "
                "component from its own history. Drop `past_covariates`, or stack the covariates "
                "into the target series (series.stack(covariates)) to forecast them jointly."
            )

    def fit(
        self,
        series,
        past_covariates=None,
        future_covariates=None,
        val_series=None,
        val_past_covariates=None,
        *args,
        **kwargs,
    ) -> "ReinPatchModel":
        """Train the model; see darts' ``TorchForecastingModel.fit``.

        Series are cast to float32 (the network's precision). Past covariates are rejected.
        """
        self._reject_past_covariates(past_covariates, val_past_covariates)
        super().fit(
            _as_float32(series), None, future_covariates, _as_float32(val_series), None,
            *args, **kwargs,
        )
        return self

    def predict(self, n: int, series=None, past_covariates=None, *args, **kwargs):
        """Forecast ``n`` steps; see darts' ``TorchForecastingModel.predict``."""
        self._reject_past_covariates(past_covariates)
        return super().predict(n, _as_float32(series), None, *args, **kwargs)

    def patch_boundaries(
        self, series: TimeSeries | Sequence[TimeSeries] | None = None
    ) -> PatchBoundaries | list[PatchBoundaries]:
        """The patches the (greedy) patcher chooses for the last input window of each series.

        Parameters
        ----------
        series
            One or several series with at least ``input_chunk_length`` steps; default the
            training series.

        Returns
        -------
        PatchBoundaries or list of PatchBoundaries
            One result per series (a list when a list is given).
        """
        if self.model is None:
            raise ValueError(
                "This ReinPatchModel is not trained yet: call fit() (or load a trained model) "
                "before patch_boundaries()."
            )
        if series is None:
            series = self.training_series
            if series is None:
                raise ValueError("Pass `series`: the model was trained on several series.")
        single = isinstance(series, TimeSeries)
        series_list = [series] if single else list(series)
        length = self.input_chunk_length
        for s in series_list:
            if len(s) < length:
                raise ValueError(
                    f"A series has {len(s)} steps, fewer than input_chunk_length={length}."
                )
        windows = np.stack([s.values(copy=False)[-length:] for s in series_list])  # (S, L, C)
        network = self.model.network
        with torch.inference_mode():
            x = torch.as_tensor(windows, dtype=self.model.dtype, device=self.model.device)
            starts = network.boundaries(x).cpu().numpy()  # (S, C, N)
        results = [
            PatchBoundaries(
                time_index=s.time_index[-length:],
                values=windows[i],
                starts=starts[i],
                components=list(s.components),
            )
            for i, s in enumerate(series_list)
        ]
        return results[0] if single else results


add_safe_globals([ReinPatchModel, _ReinPatchModule, PatchBoundaries])
