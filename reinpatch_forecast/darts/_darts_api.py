"""The private darts names the darts face uses, in one place.

darts 0.48 keeps these behind a leading underscore: the checkpoint plugin with safe loading,
the lookup of the newest checkpoint file, the trainer darts builds from ``pl_trainer_kwargs``,
the loss and metrics of a Lightning module, a likelihood's distribution, and the fields a
subclass sets in its constructor. Every other module of the package calls the functions below,
so that a darts release that renames one of them changes this file only.
"""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
import torch
from darts.models.forecasting.torch_forecasting_model import _get_checkpoint_fname
from darts.utils.data.torch_datasets.utils import PLModuleOutput
from darts.utils.serialization.torch import _DartsCheckpointIO

__all__ = ["DartsCheckpointIO", "newest_checkpoint", "is_trained", "split_params",
           "consider_static_covariates", "prediction_trainer", "compute_loss",
           "update_metrics", "attached_trainer", "distribution"]

#: darts' checkpoint plugin: Lightning's ``TorchCheckpointIO`` with darts' safe loading.
DartsCheckpointIO = _DartsCheckpointIO


def newest_checkpoint(work_dir: str, model_name: str, best: bool) -> str:
    """File name of the checkpoint darts' ``load_from_checkpoint`` picks (``best-*`` or
    ``last-*``, the newest); ``FileNotFoundError`` if there is none."""
    return _get_checkpoint_fname(work_dir, model_name, best=best)


def is_trained(model) -> bool:
    """Whether the darts model has weights to forecast with (fitted or loaded)."""
    return bool(model._fit_called) and model.model is not None


def split_params(model) -> tuple[dict[str, Any], dict[str, Any]]:
    """The constructor arguments of darts' ``TorchForecastingModel`` and of its Lightning
    module, from ``model.model_params``."""
    params = model.model_params
    return model._extract_torch_model_params(**params), model._extract_pl_module_params(**params)


def consider_static_covariates(model, flag: bool) -> None:
    """darts' ``use_static_covariates`` switch of a model."""
    model._considers_static_covariates = flag


def prediction_trainer(model, verbose: bool | None) -> pl.Trainer:
    """The trainer darts builds for ``model.predict`` (from its ``pl_trainer_kwargs``), or,
    when that one spans several devices or processes, the same on this process's device
    alone: a distributed trainer would split the series among the processes."""
    built = model._setup_trainer(None, model.model, verbose, model.n_epochs)
    if built.world_size <= 1 and built.num_devices <= 1:
        return built
    root = built.strategy.root_device
    params = dict(model.trainer_params, num_nodes=1, strategy="auto",
                  devices=[root.index or 0] if root.type == "cuda" else 1)
    if verbose is not None and not any(isinstance(callback, pl.callbacks.ProgressBar)
                                       for callback in params.get("callbacks") or []):
        params["enable_progress_bar"] = verbose
    return model._init_trainer(params, model.n_epochs)


def compute_loss(module, prediction: torch.Tensor, target: torch.Tensor, criterion,
                 sample_weight: torch.Tensor | None) -> torch.Tensor:
    """darts' loss of a module's output ``(B, H, C, Q)``: its ``loss_fn`` or likelihood,
    with sample weights."""
    return module._compute_loss(PLModuleOutput(prediction=prediction), target, criterion,
                                sample_weight)


def update_metrics(module, prediction: torch.Tensor, target: torch.Tensor, metrics) -> None:
    """darts' update of a module's ``torch_metrics`` with an output ``(B, H, C, Q)``."""
    module._update_metrics(PLModuleOutput(prediction=prediction), target, metrics)


def attached_trainer(module) -> pl.Trainer | None:
    """The Lightning trainer running ``module``, or ``None`` outside of one."""
    return module._trainer


def distribution(likelihood, prediction: torch.Tensor) -> torch.distributions.Distribution:
    """The torch distribution a darts likelihood reads from an output ``(S, H, C, Q)``."""
    return likelihood._distr_from_params(likelihood._params_from_output(prediction))
