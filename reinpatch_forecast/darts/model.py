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

The Lightning module stays beside the model: saved models record its class path
(``reinpatch_forecast.darts.model._ReinPatchModule``). Each darts member overridden here has a
one-line reason above it; darts' private names are reached through
:mod:`~reinpatch_forecast.darts._darts_api` only, and the fixes of darts' training machinery
(atomic checkpoints, the work-dir race, TensorBoard logger pickling, Ctrl+C) are in
:mod:`~reinpatch_forecast.darts._darts_fixes`.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import os
from typing import Any, Iterable, Sequence

import numpy as np
import torch
from darts import TimeSeries
from darts.models.forecasting.pl_forecasting_module import PLForecastingModule, io_processor
from darts.models.forecasting.torch_forecasting_model import (
    DEFAULT_DARTS_FOLDER,
    INIT_MODEL_NAME,
    MixedCovariatesTorchModel,
)
from darts.utils.data.torch_datasets.utils import (
    PLModuleInput,
    PLModuleOutput,
    TorchTrainingBatch,
    TorchTrainingSample,
)
from darts.utils.likelihood_models.torch import GaussianLikelihood
from darts.utils.serialization import add_safe_globals
from darts.utils.torch import MonteCarloDropout
from pytorch_lightning.callbacks import WeightAveraging

from ..errors import ReinPatchInputError, TrainingDivergedError
from ..patcher_io import patcher_from_state, resolve_patcher_state
from ..nn import (
    PATCHER_NAMES,
    Covariates,
    LearnedPatcher,
    ReinPatchConfig,
    ReinPatchNetwork,
)
from ..nn.backbone import GroupDropout
from ..nn.config import BackboneConfig, PatcherConfig, TrainingConfig
from ..options import (
    ModelOptions,
    TrainingOptions,
    build_network_config,
    document_options,
    options_from,
    patcher_learning_rate,
)
from .._lightning import lightning_output
from ..checks import check_darts_series, check_trained
from . import _darts_api as darts_api
from ._darts_fixes import (
    SAFE_CLASSES,
    interruptible,
    torch_model_kwargs,
    trainer_kwargs,
)
from .averaging import WeightEMA
from .boundaries import PatchBoundaries, last_window_boundaries
from .checkpoints import checked_load
from .rewards import elementwise_loss

__all__ = ["ReinPatchModel", "PatchBoundaries"]


#: The patchers whose decode has no ONNX form, and why (see docs/deployment.md).
_NOT_EXPORTABLE = {
    "random": "its decode draws from a seeded torch.Generator, which an ONNX graph cannot hold "
              "(ONNX's RandomUniform does not give torch's numbers)",
    "volatility": "it ranks the steps with a stable sort (aten.sort.stable), which has no ONNX "
                  "function",
}


class _MonteCarloGroupDropout(GroupDropout, MonteCarloDropout):
    """The network's group-shared dropout as a darts ``MonteCarloDropout``.

    darts finds Monte-Carlo dropout by ``isinstance(module, MonteCarloDropout)``
    (``PLForecastingModule._get_mc_dropout_modules``): it then reports the model as
    probabilistic and switches ``_mc_dropout_enabled`` on for ``predict(..., mc_dropout=True)``.
    :class:`~reinpatch_forecast.nn.backbone.GroupDropout` comes first in the method order, so
    the forward pass (the group-shared mask) and the switch are its own.
    """


def _as_monte_carlo_dropout(network: torch.nn.Module) -> None:
    """Replace every :class:`GroupDropout` of ``network`` by a :class:`_MonteCarloGroupDropout`
    of the same rate and mode (dropout modules have no state, so the weights are untouched)."""
    for name, module in list(network.named_modules()):
        if type(module) is GroupDropout:
            parent, _, attribute = name.rpartition(".")
            replacement = _MonteCarloGroupDropout(module.p).train(module.training)
            setattr(network.get_submodule(parent), attribute, replacement)


class _WithPatcherGroup:
    """darts' ``optimizer_cls`` over the network's two parameter groups.

    darts builds the optimizer as ``optimizer_cls(params=module.parameters(), **kwargs)``; this
    builds it over the backbone's trainable parameters (at the optimizer's ``lr``) and, when the
    patcher trains, the patcher's (at ``patcher_lr``, by default ``PATCHER_LR_FACTOR`` times
    ``lr``). darts' scheduler then steps both groups. A class, not a closure, so that the module
    pickles (``ddp_spawn``).
    """

    def __init__(self, optimizer_cls: type[torch.optim.Optimizer], network: ReinPatchNetwork,
                 patcher_lr: float | None) -> None:
        self.optimizer_cls = optimizer_cls
        self.network = network
        self.patcher_lr = patcher_lr

    def __call__(self, params: Iterable[torch.nn.Parameter], **kwargs) -> torch.optim.Optimizer:
        groups = [{"params": self.network.backbone_parameters()}]
        patcher = self.network.patcher_parameters()
        if patcher:
            groups.append({"params": patcher,
                           "lr": patcher_learning_rate(self.patcher_lr, kwargs.get("lr", 1e-3))})
        return self.optimizer_cls(groups, **kwargs)


class _ReinPatchModule(PLForecastingModule):
    """Lightning module: greedy boundaries in ``forward``, GRPG in ``training_step``.

    Unlike darts' own modules, it holds the network instead of being it: ``nn`` stays pure
    PyTorch (no darts, no Lightning), so the network runs and is tested without them. Its
    dropout modules become darts' ``MonteCarloDropout`` (:class:`_MonteCarloGroupDropout`), so
    darts' Monte-Carlo dropout (``mc_dropout=True``) reaches them.

    Parameters
    ----------
    network_config
        Keyword arguments of :class:`~reinpatch_forecast.nn.ReinPatchConfig` (primitives only,
        so darts can store them in checkpoints; the checkpoints' hyperparameters carry this
        name, so it stays the one checkpoints load by).
    freeze_patcher
        Keep the patcher fixed (a foundation patcher used zero-shot).
    patcher_lr
        Learning rate of the patcher's parameter group; ``None`` uses ``PATCHER_LR_FACTOR``
        times the optimizer's ``lr``.
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
        _as_monte_carlo_dropout(self.network)
        if freeze_patcher:
            self.network.patcher.freeze()
        # darts' configure_optimizers calls optimizer_cls(params=..., **optimizer_kwargs)
        self.optimizer_cls = _WithPatcherGroup(self.optimizer_cls, self.network, patcher_lr)

    @staticmethod
    def _covariates(batch: PLModuleInput | TorchTrainingBatch) -> Covariates | None:
        """The batch's covariates: past ones and the history of future ones (both known over
        the lookback) together, future ones over the horizon, static ones."""
        history = [tensor for tensor in (batch.past_covariates, batch.historic_future_covariates)
                   if tensor is not None]
        covariates = Covariates(
            past=torch.cat(history, dim=2) if history else None,  # (B, L, Cp)
            future=batch.future_covariates,  # (B, H, Cf)
            static=batch.static_covariates,  # (B, S, Cs)
        )
        if covariates.past is None and covariates.future is None and covariates.static is None:
            return None
        return covariates

    # darts' abstract hook: the greedy (decoded) forecast, for validation and prediction.
    @io_processor
    def forward(self, x_in: PLModuleInput) -> PLModuleOutput:
        batch = _in_dtype(x_in, self.dtype)
        prediction = self.network(batch.past_target, self._covariates(batch))  # (B, H, C, Q)
        # forecasts come back in the dtype of the series
        return PLModuleOutput(prediction=prediction.to(x_in.past_target.dtype))

    # Lightning's hook, where darts computes one forecast's loss: GRPG needs a group of them.
    def training_step(self, train_batch: TorchTrainingBatch, batch_idx: int) -> torch.Tensor:
        """One GRPG step (:meth:`~reinpatch_forecast.nn.ReinPatchNetwork.training_losses`).

        The backbone loss is darts' ``_compute_loss`` (loss function or likelihood, sample
        weights) of the decoded forecast; rewards are the same loss per series and patching.
        """
        batch = _in_dtype(train_batch, self.dtype)
        x, target = batch.past_target, batch.future_target  # (B, L, C), (B, H, C)

        def backbone_loss(prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            # prediction (B, H, C, Q)
            return darts_api.compute_loss(self, prediction, target, self.train_criterion,
                                          batch.sample_weight)

        def sample_loss(prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            return elementwise_loss(prediction, target, self.likelihood, self.train_criterion)

        losses = self.network.training_losses(x, target, backbone_loss, sample_loss,
                                              covariates=self._covariates(batch))
        size = x.shape[0]
        self.log("train_loss", losses.backbone_loss, batch_size=size, prog_bar=True,
                 sync_dist=True)
        diagnostics = {
            "train_policy_loss": losses.policy_loss.detach(),
            "train_reward": losses.mean_reward,
            "train_advantage": losses.advantage,
            "train_kl": losses.kl,
            "train_mean_patch_length": losses.mean_patch_length,
            "train_patch_length_std": losses.patch_length_std,
            "train_grid_shift": losses.grid_shift,
        }
        self.log_dict(diagnostics, batch_size=size, on_step=False, on_epoch=True, sync_dist=True)
        darts_api.update_metrics(self, losses.prediction, target, self.train_metrics)
        if not torch.isfinite(losses.loss):  # one scalar check (a host sync) per step
            raise TrainingDivergedError(
                self._divergence_message(losses.backbone_loss, losses.policy_loss, batch_idx)
            )
        return losses.loss

    # The patcher's sampling generator travels with the checkpoints: every fit resumed from one
    # draws the same samples (a new module would seed it from the global generator's state).
    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_save_checkpoint(checkpoint)
        checkpoint["reinpatch_sampling"] = self.network.sampling_state()

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_load_checkpoint(checkpoint)
        if "reinpatch_sampling" in checkpoint:
            self.network.load_sampling_state(checkpoint["reinpatch_sampling"])

    def _divergence_message(
        self, backbone_loss: torch.Tensor, policy_loss: torch.Tensor, batch_idx: int
    ) -> str:
        lr = self.optimizer_kwargs.get("lr", 1e-3)
        return (
            f"Training diverged: the loss is not finite at epoch {self.current_epoch}, step "
            f"{self.global_step} (batch {batch_idx} of the epoch): backbone loss "
            f"{backbone_loss.item():.4g}, policy loss {policy_loss.item():.4g}. Try a lower "
            f"learning rate (optimizer_kwargs={{'lr': {lr / 10:g}}}; now {lr:g}), gradient "
            "clipping (pl_trainer_kwargs={'gradient_clip_val': 1.0}), or rescaling series with "
            "extreme values. With save_checkpoints=True, the checkpoints written before this "
            "step are intact: ReinPatchModel.load_from_checkpoint(model_name, work_dir=..., "
            "best=False) restores the last one."
        )


#: The warmup of the default weight average (:class:`WeightEMA`): its decay at step ``n`` is
#: ``min(ema_decay, (1 + n) / (10 + n))``, so a fit of a few hundred steps averages a share of
#: its steps and a long one about ``1 / (1 - ema_decay)`` of them.
DEFAULT_EMA_WARMUP = 10

#: The Lightning precision of a model whose ``pl_trainer_kwargs`` give none, whatever the dtype
#: of the series (darts derives float64 from float64 series).
DEFAULT_PRECISION = "32-true"


def _in_dtype(batch: PLModuleInput | TorchTrainingBatch, dtype: torch.dtype):
    """``batch`` with its floating tensors in ``dtype``: the network computes in its own
    precision (float32 by default) whatever the dtype of the series, and Lightning's
    ``"32-true"`` precision leaves the inputs as they come."""
    return batch.replace(**{
        f.name: value.to(dtype) for f in dataclasses.fields(batch)
        if isinstance(value := getattr(batch, f.name), torch.Tensor) and value.is_floating_point()
    })


def _width(array: np.ndarray | None) -> int:
    """Features of a sample's covariate array ``(T, F)`` (0 when absent)."""
    return 0 if array is None else int(array.shape[-1])


def _output_layout(likelihood) -> dict[str, Any]:
    """The network's outputs per forecast step for darts' ``likelihood`` (``None``: one)."""
    nr_params = 1 if likelihood is None else likelihood.num_parameters
    if isinstance(likelihood, GaussianLikelihood):
        param_kinds = ("location", "softplus_scale")
    else:
        param_kinds = ("location",) * nr_params
    # darts sorts the quantile levels; the outputs are kept in the same increasing order.
    monotone = getattr(likelihood, "quantiles", None) is not None
    return dict(nr_params=nr_params, param_kinds=param_kinds, monotone_params=monotone)


def _check_darts_arguments(output_chunk_shift: Any, kwargs: dict[str, Any]) -> None:
    """Refuse the darts arguments ReinPatch cannot take, which darts itself accepts."""
    if kwargs.get("use_reversible_instance_norm"):
        raise ReinPatchInputError(
            "ReinPatchModel normalises every series itself (RevIN inside the network); "
            "do not pass use_reversible_instance_norm. Use revin_affine=True for a learned "
            "affine map."
        )
    if (isinstance(output_chunk_shift, bool)
            or not isinstance(output_chunk_shift, (int, np.integer)) or output_chunk_shift < 0):
        raise ReinPatchInputError(
            f"output_chunk_shift must be an integer >= 0 (the steps between the end of the "
            f"input and the start of the forecast), got {output_chunk_shift!r}."
        )


def _with_weight_average(trainer_params: dict[str, Any], ema_decay: float | None
                         ) -> dict[str, Any]:
    """The trainer's arguments with a :class:`WeightEMA` of ``ema_decay`` among the callbacks,
    unless ``ema_decay`` is ``None`` or the callbacks average the weights already."""
    if ema_decay is None:
        return trainer_params
    if isinstance(ema_decay, bool) or not isinstance(ema_decay, (int, float)) \
            or not 0 < ema_decay < 1:
        raise ReinPatchInputError(
            f"ema_decay must be None (no weight average) or a number strictly between 0 and 1 "
            f"(the average's weight on its previous value per step, e.g. 0.995), got "
            f"{ema_decay!r}."
        )
    average = WeightEMA(ema_decay, warmup=DEFAULT_EMA_WARMUP)
    callbacks = list(trainer_params.get("callbacks") or [])
    if any(isinstance(callback, (WeightEMA, WeightAveraging)) for callback in callbacks):
        return trainer_params
    return dict(trainer_params, callbacks=callbacks + [average])


def _resolve_patchers(patcher: Any, patcher_init: Any,
                      params: dict[str, Any]) -> tuple[str, dict | None, dict | None]:
    """The patcher's name, and the states of a given frozen patcher and of the learned
    patcher's starting weights (``None`` when not given).

    A patcher object or file becomes a plain state (tensors and primitives) in ``params`` (the
    model's ``model_params``), so that the model pickles and darts loads it without trusting
    arbitrary classes.
    """
    frozen = init = None
    if isinstance(patcher, str) and patcher in PATCHER_NAMES:
        name = patcher
    else:
        frozen = params["patcher"] = resolve_patcher_state(patcher, "patcher")
        name = "learned"
    if patcher_init is not None:
        if patcher != "learned":
            raise ReinPatchInputError(
                f"patcher_init starts the learned patcher from given weights, so it needs "
                f"patcher='learned', got patcher={patcher!r}. To use a pretrained patcher "
                "frozen instead, pass it as patcher=... and leave patcher_init=None."
            )
        init = params["patcher_init"] = resolve_patcher_state(patcher_init, "patcher_init")
    return name, frozen, init


def _check_covariate_values(**covariates) -> None:
    """Raise a ``ValueError`` if a covariate series has NaN, infinite or huge values (darts
    checks their time spans, not their values)."""
    for name, value in covariates.items():
        check_darts_series(value, name, 1, "a covariate")


def _check_training_series(model: "ReinPatchModel", **series: Any) -> None:
    """Raise a ``ValueError`` if a training or validation series is shorter than one training
    window or has values that are not finite (darts' message names no fix)."""
    shift = f" + output_chunk_shift={model.output_chunk_shift}" if model.output_chunk_shift else ""
    window = (model.input_chunk_length + model.output_chunk_length + model.output_chunk_shift,
              f"a training window (input_chunk_length={model.input_chunk_length} + "
              f"output_chunk_length={model.output_chunk_length}{shift})")
    for name, value in series.items():
        check_darts_series(value, name, *window, fix="Pass a longer series, or use a "
                           "smaller input_chunk_length or output_chunk_length.")


def _check_covariates_match_training(model: "ReinPatchModel", series: Any,
                                     **covariates: Any) -> None:
    """Refuse covariates a model was trained without, and, for a given ``series``, the lack of
    covariates it was trained with (darts would take the training covariates, which need not
    match ``series``)."""
    for kind, given in covariates.items():
        used = getattr(model, f"uses_{kind}_covariates")
        if given is not None and not used:
            raise ReinPatchInputError(
                f"This model was trained without {kind}_covariates, so it cannot use them: "
                f"drop {kind}_covariates from predict(), or fit the model with them."
            )
        if given is None and used and series is not None:
            raise ReinPatchInputError(
                f"This model was trained with {kind}_covariates: pass the {kind}_covariates "
                f"of `series` to predict() as well."
            )


def _check_lookback(series: Any, length: int, purpose: str) -> None:
    """Raise a ``ValueError`` if a series is shorter than the lookback ``length``, or its last
    ``length`` steps (the window the network reads for ``purpose``) are not finite."""
    check_darts_series(series, "series", length, f"{purpose} (input_chunk_length={length})",
                       tail=length,
                       fix="Pass a longer series, or a model with a smaller input_chunk_length.")


def _check_exportable(patcher_name: str) -> None:
    """Refuse an ONNX export without the onnx extra, or of a patcher whose decode has no
    ONNX form, saying why."""
    missing = [name for name in ("onnx", "onnxscript") if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(
            f"to_onnx needs {' and '.join(missing)}: pip install 'reinpatch-forecast[onnx]' "
            "(onnx, onnxscript and onnxruntime)."
        )
    if patcher_name in _NOT_EXPORTABLE:
        raise ReinPatchInputError(
            f"patcher={patcher_name!r} cannot be exported to ONNX: "
            f"{_NOT_EXPORTABLE[patcher_name]}. The learned, pretrained and uniform patchers "
            "export."
        )


def _saved_model_files(path: str) -> list[tuple[str, str]]:
    """The files ``save(path)`` writes, for :func:`checked_load`."""
    return [(path, "saved model"), (path + ".ckpt", "checkpoint of the saved model")]


class ReinPatchModel(MixedCovariatesTorchModel):
    """ReinPatch: a Transformer over variable-size patches chosen by a policy trained with GRPG.

    Each target component's lookback window is cut into ``ceil(L / compression_rate)``
    contiguous patches by the *patcher*; each patch becomes a token; a pre-norm Transformer
    encodes the tokens, a time-aligned readout maps each token back onto the steps of its patch,
    and a head over the steps forecasts ``output_chunk_length`` steps. The learned patcher is
    trained by Group Relative Policy Gradient: the backbone trains on the patcher's decoded
    (most likely) patching, the one validation and prediction use; ``group_size`` sampled
    patchings per series are scored against it, and a sample's advantage is its reward
    (negative loss) minus the decode's. A new learned patcher decodes exactly the uniform grid
    and moves a boundary only where the reward pays for it.

    Parameters
    ----------
    input_chunk_length
        Lookback ``L``.
    output_chunk_length
        Horizon ``H`` of one forward pass.
    output_chunk_shift
        Steps between the end of the input and the start of the output.
    %(options)s
    use_static_covariates
        Use the static covariates of the series (an embedding added to every token) when they
        have any; ``False`` ignores them.
    **kwargs
        Every argument of darts' ``TorchForecastingModel`` (``batch_size``, ``n_epochs``,
        ``likelihood``, ``loss_fn``, ``optimizer_kwargs``, ``lr_scheduler_cls``,
        ``random_state``, ``pl_trainer_kwargs``, ``save_checkpoints``, ``torch_metrics``, ...);
        see the `darts documentation
        <https://unit8co.github.io/darts/generated_api/darts.models.forecasting.torch_forecasting_model.html>`_.
        ``use_reversible_instance_norm`` is not accepted: the network normalises every series
        itself. The learning rate is darts' constant one unless ``lr_scheduler_cls`` is given;
        the weights are averaged along the way (``ema_decay``).

    Notes
    -----
    Without a ``model_name``, every model gets its own: darts' default
    (``"<date>_<time to the second>_torch_model_run_<pid>"``) followed by ``"_"`` and 8 random
    hex digits. darts' name alone is shared by all models a process creates within one second
    (and by processes with the same pid in different containers), and such models, with
    ``save_checkpoints=True`` in one ``work_dir``, overwrite each other's checkpoints. A given
    ``model_name`` is used as it is; ``untrained_model()`` and clones get a new default name.

    Probabilistic forecasts follow darts: with a ``likelihood``, ``predict(n, num_samples=k)``
    draws from it and ``predict_likelihood_parameters=True`` gives its parameters; without one,
    ``predict(n, num_samples=k, mc_dropout=True)`` gives ``k`` Monte-Carlo dropout samples (the
    network's dropout is darts' ``MonteCarloDropout``; they differ when ``dropout > 0``), and
    without ``mc_dropout`` the forecast is deterministic.

    A forecast comes back in the dtype of the series it forecasts, as with darts' own models
    (float32 or float64), from ``predict``, ``historical_forecasts`` and ``backtest`` alike. The
    network computes in float32 (Lightning's precision ``"32-true"`` unless
    ``pl_trainer_kwargs`` give one), about twice as fast as float64 on a CPU, so a float64
    forecast is the float32 forecast cast up; ``pl_trainer_kwargs={"precision": "64"}``
    computes in float64 throughout.

    darts' ``to_onnx`` exports the prediction path (the decoded patching and the backbone) for
    onnxruntime (``pip install 'reinpatch-forecast[onnx]'``); the ``"random"`` and
    ``"volatility"`` patchers have no ONNX form and are refused with the reason (see the
    deployment page of the documentation).

    With ``save_checkpoints=True``, checkpoints are written to a temporary file beside them and
    renamed into place (:class:`~reinpatch_forecast.darts.checkpoints.AtomicCheckpointIO`, in
    the trainer's ``plugins`` unless ``pl_trainer_kwargs`` give a checkpoint plugin): a process
    killed at any moment leaves the previous checkpoints loadable. The plugin and the callback
    of :mod:`~reinpatch_forecast.darts._darts_fixes` are part of the model's trainer
    arguments; ``load(path, pl_trainer_kwargs=...)`` replaces those arguments as given (darts).

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
        compression_rate: float | tuple[float, float] = ModelOptions.compression_rate,
        levels: int = ModelOptions.levels,
        patcher: str | os.PathLike | LearnedPatcher | dict = ModelOptions.patcher,
        patcher_init: str | os.PathLike | LearnedPatcher | dict | None = ModelOptions.patcher_init,
        budget: str = ModelOptions.budget,
        d_model: int = ModelOptions.d_model,
        n_heads: int = ModelOptions.n_heads,
        n_layers: int = ModelOptions.n_layers,
        dropout: float = ModelOptions.dropout,
        resample_points: int | None = ModelOptions.resample_points,
        step_width: int | None = ModelOptions.step_width,
        revin_affine: bool = ModelOptions.revin_affine,
        group_size: int = TrainingOptions.group_size,
        scored_share: float = TrainingOptions.scored_share,
        kl_coef: float = TrainingOptions.kl_coef,
        ema_decay: float | None = TrainingOptions.ema_decay,
        patcher_lr: float | None = TrainingOptions.patcher_lr,
        use_static_covariates: bool = True,
        **kwargs,
    ) -> None:
        _check_darts_arguments(output_chunk_shift, kwargs)
        torch_params, pl_module_params = darts_api.split_params(self)
        super().__init__(**torch_model_kwargs(torch_params))
        self.pl_module_params = pl_module_params
        self.trainer_params = _with_weight_average(
            trainer_kwargs(self.trainer_params, given=kwargs.get("pl_trainer_kwargs") or {},
                           log_tensorboard=bool(kwargs.get("log_tensorboard"))), ema_decay)
        # float32 for float64 series too (darts would compute in float64, about twice as slow
        # on a CPU); the module returns forecasts in the dtype of the series
        self.trainer_params.setdefault("precision", DEFAULT_PRECISION)
        darts_api.consider_static_covariates(self, use_static_covariates)
        patcher_name, self._frozen_patcher_state, self._init_state = _resolve_patchers(
            patcher, patcher_init, self.model_params)
        self.options, self.training_options = options_from(self.model_params)
        given = self._frozen_patcher_state or self._init_state
        # Built (and so validated, with the given patcher's fit) here, not at the first fit;
        # the output layout, which depends on the data and the likelihood, joins it in
        # _create_model.
        self.network_config = build_network_config(
            self.options, self.training_options, input_chunk_length, output_chunk_length,
            patcher_name=patcher_name,
            given_patcher_config=given["config"] if given is not None else None,
        )

    # darts' abstract hook: the Lightning module for the shapes of the first training sample.
    def _create_model(self, train_sample: TorchTrainingSample) -> torch.nn.Module:
        # Primitives, so that darts stores them in checkpoints; the module builds the config.
        config = dict(
            self.network_config.to_dict(), **_output_layout(self.likelihood),
            n_channels=train_sample.past_target.shape[1],
            n_past_covariates=(_width(train_sample.past_covariates)
                               + _width(train_sample.historic_future_covariates)),
            n_future_covariates=_width(train_sample.future_covariates),
            n_static_covariates=_width(train_sample.static_covariates),
        )
        module = _ReinPatchModule(
            network_config=config,
            freeze_patcher=self._frozen_patcher_state is not None,
            patcher_lr=self.training_options.patcher_lr,
            **self.pl_module_params,
        )
        given = self._frozen_patcher_state or self._init_state
        if given is not None:
            # Rebuilding the given patcher initialises weights that the state then replaces:
            # drawn from a fork of the global generator, so the data order and dropout masks
            # stay those of `patcher="uniform"` at the same seed (the network's common random
            # numbers), and a given patcher that keeps the grid trains exactly as uniform.
            with torch.random.fork_rng(devices=[]):
                rebuilt = patcher_from_state(given)
            module.network.patcher.load_state_dict(rebuilt.state_dict())
        return module

    # darts' public hook (False by default): static covariates become a token embedding.
    @property
    def supports_static_covariates(self) -> bool:
        return True

    # The value checks (darts checks spans, not values), the length checks (darts' message names
    # no fix, and calls a short val_series `series`), and Ctrl+C.
    def fit(self, series, past_covariates=None, future_covariates=None, val_series=None,
            val_past_covariates=None, val_future_covariates=None, *args,
            **kwargs) -> "ReinPatchModel":
        """Train the model; see darts' ``TorchForecastingModel.fit``.

        The network computes in float32 whatever the dtype of the series (each batch is cast
        to it), or in float64 with ``pl_trainer_kwargs={"precision": "64"}``; forecasts come
        back in the dtype of the series they forecast (see :meth:`predict`). Past covariates
        (and the history of future covariates) are averaged over each target patch and added to
        its token; future covariates enter the forecast step by step; static covariates of the
        series (``use_static_covariates=True``, darts' default) become an embedding of every
        token. darts checks that covariates cover the windows and names the missing span.

        Lightning's start-up lines ("GPU available: ...") show where its progress bar does
        (``verbose``, else the trainer's ``enable_progress_bar``), as with darts' own models;
        without them the levels of Lightning's loggers are raised for the call only.

        Raises
        ------
        ValueError
            If a series is shorter than ``input_chunk_length + output_chunk_length``, or has
            NaN, infinite or too large (> 1e18) values.
        TrainingDivergedError
            (a ``RuntimeError``) If the loss becomes NaN or infinite; the message gives the
            step and what to try.
        KeyboardInterrupt
            On Ctrl+C: training stops, and the model keeps the weights of its last step.
        """
        _check_covariate_values(past_covariates=past_covariates,
                                future_covariates=future_covariates,
                                val_past_covariates=val_past_covariates,
                                val_future_covariates=val_future_covariates)
        _check_training_series(self, series=series, val_series=val_series)
        verbose = kwargs.get("verbose", args[1] if len(args) > 1 else None)
        with lightning_output(verbose, self.trainer_params), interruptible(self):
            super().fit(series, past_covariates, future_covariates, val_series,
                        val_past_covariates, val_future_covariates, *args, **kwargs)
        return self

    # The checks of the window a forecast reads, the covariates the model was trained with, and
    # one device under DDP.
    def predict(self, n: int, series=None, past_covariates=None, future_covariates=None,
                *args, **kwargs):
        """Forecast ``n`` steps; see darts' ``TorchForecastingModel.predict``.

        A model whose ``pl_trainer_kwargs`` train on several devices (DDP) predicts on one
        device (the one of this process), so that every process gets every forecast; pass
        ``trainer`` to choose another.

        The network computes in its own precision (float32, or float64 with
        ``pl_trainer_kwargs={"precision": "64"}``); forecasts (points, samples, likelihood
        parameters) come back in the dtype of the series (without ``series``, of the training
        series), as with darts' own models: a float64 series gives a float64 forecast, whose
        values are the float32 forecast cast up (a likelihood's parameters and draws are computed
        in float64). darts forecasts a list of series in batches, so a list that mixes float32
        and float64 series comes back in float64, as does every forecast with
        ``precision="64"``.
        """
        check_trained(darts_api.is_trained(self), "predict()")
        _check_lookback(series, self.input_chunk_length, "a forecast")
        _check_covariate_values(past_covariates=past_covariates,
                                future_covariates=future_covariates)
        _check_covariates_match_training(self, series, past=past_covariates,
                                         future=future_covariates)
        verbose = kwargs.get("verbose", args[2] if len(args) > 2 else None)
        with lightning_output(verbose, self.trainer_params):
            if not args and kwargs.get("trainer") is None:
                kwargs["trainer"] = darts_api.prediction_trainer(self, kwargs.get("verbose"))
            return super().predict(n, series, past_covariates, future_covariates, *args,
                                   **kwargs)

    # darts' export, after the checks that name the fix (the onnx extra, a patcher whose decode
    # has no ONNX form), without torch.onnx's step log (verbose=False unless given).
    def to_onnx(self, path: str | None = None, **kwargs):
        """Export the prediction path to ONNX; see darts' ``TorchForecastingModel.to_onnx``.

        ``kwargs`` go to ``torch.onnx.export``; ``verbose`` is ``False`` unless given.

        Raises
        ------
        ImportError
            If ``onnx`` or ``onnxscript`` is missing (``pip install 'reinpatch-forecast[onnx]'``).
        ValueError
            If the patcher is ``"random"`` or ``"volatility"``: their decodes have no ONNX form.
        """
        _check_exportable(self.network_config.patcher.name)
        kwargs.setdefault("verbose", False)
        return super().to_onnx(path, **kwargs)

    # -- persistence: a message naming a missing, truncated or corrupted file before darts
    # reads it, and the temporary files of killed checkpoint writes removed (checked_load).
    @classmethod
    def load(cls, path: str, pl_trainer_kwargs: dict | None = None, trusted: bool = False,
             **kwargs) -> "ReinPatchModel":
        """Load a model saved with :meth:`save`; see darts' ``TorchForecastingModel.load``.

        Pass ``map_location="cpu"`` to load on a CPU a model saved on a GPU. The temporary
        files that killed checkpoint writes left in the folder of ``path`` are removed (as by
        checkpoint writes).

        Raises
        ------
        FileNotFoundError
            If ``path`` does not exist.
        ValueError
            If ``path`` or its checkpoint ``path + ".ckpt"`` is truncated or corrupted (the
            message names the file), or is not a saved ``ReinPatchModel``.
        RuntimeError
            If the model was saved on a GPU and is loaded without ``map_location="cpu"`` on a
            machine without one.
        """
        path = os.fspath(path)
        load = functools.partial(super().load, path, pl_trainer_kwargs=pl_trainer_kwargs,
                                 trusted=trusted, **kwargs)
        return checked_load(load, _saved_model_files(path), f"No saved model at {path!r}.",
                            expected=ReinPatchModel)

    def load_weights(self, path: str, *args, **kwargs) -> None:
        """Load the weights of a model saved with :meth:`save`; see darts' ``load_weights``.

        Raises the errors of :meth:`load` for a missing, truncated or corrupted file.
        """
        path = os.fspath(path)
        checked_load(functools.partial(super().load_weights, path, *args, **kwargs),
                     _saved_model_files(path), f"No saved model at {path!r}.")

    @staticmethod
    def load_from_checkpoint(model_name: str, work_dir: str | None = None,
                             file_name: str | None = None, best: bool = True,
                             trusted: bool = False, **kwargs) -> "ReinPatchModel":
        """Load a checkpoint written with ``save_checkpoints=True``; see darts'
        ``TorchForecastingModel.load_from_checkpoint``.

        ``best=False`` loads the most recent checkpoint (to resume training: ``fit(series,
        epochs=E)`` then trains until ``E`` epochs in all, counting the checkpoint's). The
        temporary files that killed checkpoint writes left in the checkpoint folder are removed.

        Raises
        ------
        FileNotFoundError
            If the model's folder holds no such checkpoint.
        ValueError
            If the checkpoint or the model file beside it is truncated or corrupted (the
            message names the file), or is not a ``ReinPatchModel``'s.
        """
        if work_dir is None:
            work_dir = os.path.join(os.getcwd(), DEFAULT_DARTS_FOLDER)
        if file_name is None:  # resolved once here, so darts loads the file checked
            file_name = darts_api.newest_checkpoint(work_dir, model_name, best=best)
        folder = os.path.join(work_dir, model_name)
        path = os.path.join(folder, "checkpoints", file_name)
        load = functools.partial(MixedCovariatesTorchModel.load_from_checkpoint, model_name,
                                 work_dir=work_dir, file_name=file_name, best=best,
                                 trusted=trusted, **kwargs)
        files = [(path, "checkpoint"),
                 (os.path.join(folder, INIT_MODEL_NAME), "model file of the checkpoints")]
        return checked_load(load, files, f"No checkpoint at {path!r}.", expected=ReinPatchModel,
                            loader="load_from_checkpoint")

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

        Raises
        ------
        ValueError
            If a series is shorter than ``input_chunk_length``, or its last
            ``input_chunk_length`` steps have NaN, infinite or too large (> 1e18) values.
        """
        check_trained(darts_api.is_trained(self), "patch_boundaries()")
        if series is None:
            series = self.training_series
            if series is None:
                raise ReinPatchInputError("Pass `series`: the model was trained on several series.")
        single = isinstance(series, TimeSeries)
        series_list = [series] if single else list(series)
        # the check predict runs: the network reads the last input_chunk_length steps
        _check_lookback(series if single else series_list, self.input_chunk_length,
                        "the patches of a window")
        results = last_window_boundaries(self.model, series_list, self.input_chunk_length)
        return results[0] if single else results


ReinPatchModel.__doc__ = document_options(ReinPatchModel.__doc__)

# Saved models hold their options and network configuration (dataclasses of primitives), the
# trainer arguments of _darts_fixes, and a WeightEMA the user gives.
add_safe_globals([ReinPatchModel, _ReinPatchModule, PatchBoundaries, ModelOptions,
                  TrainingOptions, ReinPatchConfig, BackboneConfig, PatcherConfig,
                  TrainingConfig, WeightEMA, *SAFE_CLASSES])
