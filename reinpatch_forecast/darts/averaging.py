"""An exponential moving average of the weights, as a Lightning callback darts can save.

Lightning's ``WeightAveraging`` keeps an average of the module's weights during training,
validates with it and leaves it in the module when training ends (and in the checkpoints, so
darts' ``load_best`` restores it). It holds an averaging function that cannot be pickled and a
copy of the module, while darts pickles the trainer arguments with the model
(``save_checkpoints=True``, ``save``). :class:`WeightEMA` therefore holds only its decay: at
the start of every fit it builds a new ``WeightAveraging`` with an exponential average and
passes it Lightning's hooks, all through Lightning's public API.
"""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
from pytorch_lightning.callbacks import Callback, WeightAveraging
from torch.optim.swa_utils import get_ema_multi_avg_fn

from ..errors import ReinPatchInputError

__all__ = ["WeightEMA"]


class WeightEMA(Callback):
    """Validate and predict with an exponential moving average of the weights.

    After every optimizer step, ``average <- decay * average + (1 - decay) * weights`` (the
    buffers too), starting from the weights after the first step of each fit. Validation, early
    stopping and the checkpoints see the average; after training the module holds it.
    Prediction costs nothing more. A model saved with the callback keeps its decay, not the
    average (the module holds that).

    Parameters
    ----------
    decay
        The average's weight on its previous value, per optimizer step, in ``(0, 1)``: the
        average spans about ``1 / (1 - decay)`` steps (200 at 0.995). Keep it well below the
        steps of a fit; with a few dozen steps an epoch, use a smaller one.

    Examples
    --------
    >>> from reinpatch_forecast.darts import WeightEMA
    >>> trainer_kwargs = {"callbacks": [WeightEMA(decay=0.995)]}  # pl_trainer_kwargs
    """

    def __init__(self, decay: float = 0.995) -> None:
        if isinstance(decay, bool) or not isinstance(decay, (int, float)) or not 0 < decay < 1:
            raise ReinPatchInputError(
                f"decay must be a number strictly between 0 and 1 (the average's weight on its "
                f"previous value, per step; 0.995 spans about 200 steps), got {decay!r}."
            )
        super().__init__()
        self.decay = float(decay)
        self._averaging: WeightAveraging | None = None

    # A fresh average for every fit: a second fit of the same model starts its own.
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage == "fit":
            self._averaging = WeightAveraging(multi_avg_fn=get_ema_multi_avg_fn(self.decay))
        if self._averaging is not None:
            self._averaging.setup(trainer, pl_module, stage)

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage == "fit":  # the module holds the average now; the copy is not needed
            self._averaging = None

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                           outputs: Any, batch: Any, batch_idx: int) -> None:
        if self._averaging is not None:
            self._averaging.on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._averaging is not None:
            self._averaging.on_train_epoch_end(trainer, pl_module)

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._averaging is not None:
            self._averaging.on_train_end(trainer, pl_module)

    def on_validation_epoch_start(self, trainer: pl.Trainer,
                                  pl_module: pl.LightningModule) -> None:
        if self._averaging is not None:
            self._averaging.on_validation_epoch_start(trainer, pl_module)

    def on_validation_epoch_end(self, trainer: pl.Trainer,
                                pl_module: pl.LightningModule) -> None:
        if self._averaging is not None:
            self._averaging.on_validation_epoch_end(trainer, pl_module)

    def state_dict(self) -> dict[str, Any]:
        return {} if self._averaging is None else self._averaging.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if self._averaging is not None and state_dict:
            self._averaging.load_state_dict(state_dict)

    def on_save_checkpoint(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                           checkpoint: dict[str, Any]) -> None:
        if self._averaging is not None:
            self._averaging.on_save_checkpoint(trainer, pl_module, checkpoint)

    def on_load_checkpoint(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                           checkpoint: dict[str, Any]) -> None:
        if self._averaging is not None:
            self._averaging.on_load_checkpoint(trainer, pl_module, checkpoint)

    # darts pickles the callback with the model: the decay, not the average or its function.
    def __getstate__(self) -> dict[str, Any]:
        return {"decay": self.decay}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.decay = float(state["decay"])
        self._averaging = None
