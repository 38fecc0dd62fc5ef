"""General fixes of darts' ``TorchForecastingModel``, none of them about ReinPatch.

:class:`DartsFixesMixin` goes before the darts base class (``class M(DartsFixesMixin,
MixedCovariatesTorchModel)``). Each override below is a private darts method, with a one-line
reason naming what darts lacks; ``tests/darts/test_overrides.py`` lists them, so that a new one
is a visible change. :func:`default_model_name` gives every model a name of its own.
"""

from __future__ import annotations

import datetime
import os
import signal
import threading
import uuid

from darts.models.forecasting.torch_forecasting_model import _get_logs_folder, _get_runs_folder
from lightning_fabric.plugins.io.torch_io import TorchCheckpointIO
from pytorch_lightning.loggers import TensorBoardLogger

from .checkpoints import AtomicCheckpointIO

__all__ = ["DartsFixesMixin", "default_model_name"]

#: Stands for the TensorBoard logger of ``log_tensorboard=True`` in a pickled model.
_OWN_TENSORBOARD_LOGGER = "<the model's TensorBoard logger, rebuilt on load>"


def default_model_name() -> str:
    """darts' default model name made unique with 8 random hex digits.

    darts' name alone (``"<date>_<time to the second>_torch_model_run_<pid>"``) is shared by all
    models a process creates within one second (and by processes with the same pid in different
    containers); such models, checkpointing in one ``work_dir``, overwrite each other's files.
    """
    now = datetime.datetime.now().strftime("%Y-%m-%d_%H_%M_%S")
    return f"{now}_torch_model_run_{os.getpid()}_{uuid.uuid4().hex[:8]}"


class DartsFixesMixin:
    """Atomic checkpoints, a race-free work dir, single-device prediction under DDP, and Ctrl+C
    as a ``KeyboardInterrupt`` that leaves the model usable."""

    # darts lacks a loadable file for a model with log_tensorboard=True: it pickles the
    # TensorBoard logger it created, a class its safe loader refuses. The logger is left out of
    # the pickle and rebuilt on load, on the same folder; a logger the user passed is kept.
    def __getstate__(self) -> dict:
        state = super().__getstate__()
        if self._owns_logger(state["trainer_params"].get("logger")):
            state["trainer_params"] = {**state["trainer_params"], "logger": _OWN_TENSORBOARD_LOGGER}
        return state

    # darts lacks the logger back after such a load: the one left out is rebuilt here.
    def __setstate__(self, state: dict) -> None:
        rebuild = state.get("trainer_params", {}).get("logger") == _OWN_TENSORBOARD_LOGGER
        super().__setstate__(state)
        if rebuild:
            self.trainer_params["logger"] = TensorBoardLogger(
                save_dir=_get_logs_folder(self.work_dir, self.model_name), name="", version="logs")

    def _owns_logger(self, logger) -> bool:
        """Whether ``logger`` is the TensorBoard logger darts built for ``log_tensorboard=True``
        (not one given in ``pl_trainer_kwargs``)."""
        given = (self._model_params.get("pl_trainer_kwargs") or {}).get("logger")
        return isinstance(logger, TensorBoardLogger) and logger is not given and bool(
            self._model_params.get("log_tensorboard"))

    # darts lacks a race-free mkdir: it checks that the folders exist, then creates them, so of
    # two processes starting models in one work_dir at once the loser fails with FileExistsError.
    def _create_save_dirs(self) -> None:
        os.makedirs(_get_runs_folder(self.work_dir, self.model_name), exist_ok=True)

    # darts lacks atomic checkpoint files (and a hook for trainer plugins): its default
    # checkpoint plugin is replaced by the atomic one (same safe loading); a user's own is kept.
    @classmethod
    def _init_trainer(cls, trainer_params: dict, max_epochs: int | None = None):
        plugins = list(trainer_params.get("plugins") or [])
        if not any(isinstance(plugin, TorchCheckpointIO) for plugin in plugins):
            trainer_params = {**trainer_params, "plugins": plugins + [AtomicCheckpointIO()]}
        return super(DartsFixesMixin, cls)._init_trainer(trainer_params, max_epochs)

    # darts lacks single-device prediction under DDP: Lightning splits the series of a
    # prediction among the processes of a distributed trainer (each would get part of the
    # forecasts, or fail with fewer series than processes); a given trainer is kept.
    def _setup_for_predict(self, *args, trainer=None, verbose=None, **kwargs):
        if trainer is None and self.model is not None:
            trainer = self._single_device_trainer(verbose)
        return super()._setup_for_predict(*args, trainer=trainer, verbose=verbose, **kwargs)

    def _single_device_trainer(self, verbose):
        """darts' own trainer for prediction, or, when it spans several devices or processes,
        the same on this process's device alone."""
        built = self._setup_trainer(None, self.model, verbose, self.n_epochs)
        if built.world_size <= 1 and built.num_devices <= 1:
            return built
        root = built.strategy.root_device
        params = self.trainer_params
        self.trainer_params = {
            **params,
            "devices": [root.index or 0] if root.type == "cuda" else 1,
            "strategy": "auto",
            "num_nodes": 1,
        }
        try:
            return self._setup_trainer(None, self.model, verbose, self.n_epochs)
        finally:
            self.trainer_params = params

    # darts lacks a usable model after Ctrl+C: it attaches the module and trainer only after
    # training (attached before, an interrupted first fit keeps its weights, predicts, saves),
    # and Lightning answers Ctrl+C with sys.exit(1), here turned back into a KeyboardInterrupt.
    def _train(self, trainer, model, *args, **kwargs) -> None:
        self.model, self.trainer = model, trainer
        sigint_handler = signal.getsignal(signal.SIGINT)
        try:
            super()._train(trainer, model, *args, **kwargs)
        except SystemExit as error:
            # Lightning stops training, ignores SIGINT from then on and calls sys.exit(1); a
            # KeyboardInterrupt keeps the session (and a notebook kernel) alive.
            if not isinstance(error.__context__, KeyboardInterrupt):
                raise
            raise KeyboardInterrupt(self._interrupted_message()) from None
        finally:
            if (
                sigint_handler is not None
                and threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is not sigint_handler
            ):
                signal.signal(signal.SIGINT, sigint_handler)

    def _interrupted_message(self) -> str:
        epoch = self.trainer.current_epoch if self.trainer is not None else "?"
        message = (
            f"Training of {self.model_name!r} was interrupted in epoch {epoch}. The model keeps "
            "the weights of its last training step: it can predict and save, and fit() "
            "continues training."
        )
        if self.save_checkpoints:
            name = type(self).__name__
            message += (
                " The checkpoints written so far are in "
                f"{os.path.join(self.work_dir, self.model_name, 'checkpoints')}: "
                f"{name}.load_from_checkpoint({self.model_name!r}, "
                f"work_dir={self.work_dir!r}, best=False) restores the last one."
            )
        return message
