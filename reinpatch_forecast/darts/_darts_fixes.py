"""Fixes of darts' and Lightning's training machinery, none of them about ReinPatch.

Each comes through a hook darts or Lightning offer, and each has the test that shows the
failure it prevents:

* :func:`torch_model_kwargs` applies the two fixes of darts' constructor arguments:
  :func:`default_model_name`, a model name of its own for every model (darts' default is
  shared by the models a process creates within one second, which then overwrite each other's
  checkpoints: ``test_processes_and_models_with_default_names_keep_their_own_checkpoints``),
  and :func:`create_run_folder`, the model's folder made before darts checks for it (darts
  checks that the folder exists, then creates it, so of two processes starting models in one
  new ``work_dir`` the slower fails: ``test_a_work_dir_created_by_another_process_meanwhile...``).
* :func:`trainer_kwargs` adds to ``pl_trainer_kwargs``: the atomic checkpoint plugin
  (:class:`~reinpatch_forecast.darts.checkpoints.AtomicCheckpointIO`), the callback that trains
  the module in training mode and keeps the trainer of an interrupted fit
  (:class:`TrainingFixes`), and, for
  ``log_tensorboard=True``, a TensorBoard logger that darts' safe loader can read back
  (:class:`TensorBoardLogger`).
* :func:`interruptible`: Ctrl+C during ``fit`` as a ``KeyboardInterrupt`` that leaves the model
  usable; Lightning answers it with ``sys.exit(1)`` and ignores SIGINT from then on.
"""

from __future__ import annotations

import datetime
import inspect
import os
import signal
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytorch_lightning as pl
from lightning_fabric.plugins.io.torch_io import TorchCheckpointIO
from darts.models.forecasting.torch_forecasting_model import TorchForecastingModel
from pytorch_lightning import loggers

from .checkpoints import AtomicCheckpointIO

__all__ = ["default_model_name", "create_run_folder", "torch_model_kwargs", "trainer_kwargs",
           "interruptible",
           "TrainingFixes", "TensorBoardLogger", "SAFE_CLASSES"]


def default_model_name() -> str:
    """darts' default model name (``"<date>_<time>_torch_model_run_<pid>"``) made unique with
    8 random hex digits."""
    now = datetime.datetime.now().strftime("%Y-%m-%d_%H_%M_%S")
    return f"{now}_torch_model_run_{os.getpid()}_{uuid.uuid4().hex[:8]}"


def create_run_folder(work_dir: str, model_name: str) -> None:
    """Create ``work_dir/model_name`` (the folder of a model's checkpoints and logs) if it is
    missing, whoever creates it first."""
    os.makedirs(os.path.join(work_dir, model_name), exist_ok=True)


#: darts' default ``work_dir`` (fixed when darts is imported).
_DEFAULT_WORK_DIR = inspect.signature(TorchForecastingModel.__init__).parameters["work_dir"].default


def torch_model_kwargs(params: dict[str, Any]) -> dict[str, Any]:
    """darts' ``TorchForecastingModel`` arguments ``params`` with a model name of its own when
    none is given, and, with ``save_checkpoints``, the model's folder created.

    The name is not put in the model's ``model_params``, so that ``untrained_model()`` and
    clones draw a name of their own.
    """
    params = dict(params)
    if params.get("model_name") is None:
        params["model_name"] = default_model_name()
    if params.get("save_checkpoints"):
        create_run_folder(params.get("work_dir", _DEFAULT_WORK_DIR), params["model_name"])
    return params


class TensorBoardLogger(loggers.TensorBoardLogger):
    """Lightning's TensorBoard logger, pickled as its three constructor arguments.

    darts builds a TensorBoard logger for ``log_tensorboard=True`` and saves it with the model;
    its pickled state holds classes darts' safe loader refuses. This one reduces to its folder,
    name and version, so the model loads without ``trusted=True`` and logs where it did.
    """

    def __reduce__(self):
        return type(self), (self.save_dir, self.name, self.version)


class TrainingFixes(pl.Callback):
    """Training starts in training mode, and an interrupted one leaves its trainer and module.

    Lightning trains a module in the mode it finds it in, and darts' ``to_onnx`` leaves the
    exported module, and darts' default ``loss_fn`` that every model shares, in evaluation mode:
    a later fit would train without dropout (``test_onnx.py``: a fit after the export). darts
    attaches the module and trainer to the model only after training returns, and Lightning
    ends an interrupted training with ``sys.exit(1)``: without keeping them until ``fit`` takes
    them (:func:`interruptible`), an interrupted first fit would leave a model without weights.
    """

    def __init__(self) -> None:
        self.interrupted: tuple[pl.Trainer, pl.LightningModule] | None = None

    def on_fit_start(self, trainer, pl_module) -> None:
        pl_module.train()

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:
        if isinstance(exception, KeyboardInterrupt):
            self.interrupted = (trainer, pl_module)

    def __getstate__(self) -> dict:
        return {"interrupted": None}  # a trainer is never pickled with the model


def trainer_kwargs(trainer_params: dict[str, Any], given: dict[str, Any],
                   log_tensorboard: bool) -> dict[str, Any]:
    """darts' ``trainer_params`` with the fixes of this module; what the user ``given`` in
    ``pl_trainer_kwargs`` (a checkpoint plugin, a logger) is kept."""
    params = dict(trainer_params)
    plugins = list(params.get("plugins") or [])
    if not any(isinstance(plugin, TorchCheckpointIO) for plugin in plugins):
        params["plugins"] = plugins + [AtomicCheckpointIO()]
    params["callbacks"] = list(params.get("callbacks") or []) + [TrainingFixes()]
    logger = params.get("logger")
    if log_tensorboard and "logger" not in given and isinstance(logger, loggers.TensorBoardLogger):
        params["logger"] = TensorBoardLogger(logger.save_dir, logger.name, logger.version)
    return params


@contextmanager
def interruptible(model) -> Iterator[None]:
    """Turn Lightning's exit on Ctrl+C during ``model.fit`` back into a ``KeyboardInterrupt``.

    The model keeps the module and trainer of the interrupted training (it predicts, saves and
    trains on), the message says where its checkpoints are, and the SIGINT handler of before
    the fit is restored (Lightning leaves SIGINT ignored).
    """
    handler = signal.getsignal(signal.SIGINT)
    try:
        yield
    except SystemExit as error:
        if not isinstance(error.__context__, KeyboardInterrupt):
            raise
        for callback in model.trainer_params.get("callbacks") or []:
            if isinstance(callback, TrainingFixes) and callback.interrupted:
                model.trainer, model.model = callback.interrupted
                callback.interrupted = None
        raise KeyboardInterrupt(_interrupted_message(model)) from None
    finally:
        if (handler is not None and threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is not handler):
            signal.signal(signal.SIGINT, handler)


def _interrupted_message(model) -> str:
    epoch = model.trainer.current_epoch if model.trainer is not None else "?"
    message = (
        f"Training of {model.model_name!r} was interrupted in epoch {epoch}. The model keeps "
        "the weights of its last training step: it can predict and save, and fit() continues "
        "training."
    )
    if model.save_checkpoints:
        name = type(model).__name__
        message += (
            " The checkpoints written so far are in "
            f"{os.path.join(model.work_dir, model.model_name, 'checkpoints')}: "
            f"{name}.load_from_checkpoint({model.model_name!r}, work_dir={model.work_dir!r}, "
            "best=False) restores the last one."
        )
    return message


#: The classes of this module a saved model holds (in its trainer arguments), for darts' safe
#: loading.
SAFE_CLASSES = [AtomicCheckpointIO, TrainingFixes, TensorBoardLogger]
