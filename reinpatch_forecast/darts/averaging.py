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

from typing import Any, Callable

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import Callback, WeightAveraging
from torch import Tensor

from ..errors import ReinPatchInputError

__all__ = ["WeightEMA", "ema_with_warmup"]


AverageFn = Callable[[list[Tensor], list[Tensor], Tensor], None]


def ema_with_warmup(decay: float, warmup: int | None) -> AverageFn:
    """An exponential average whose decay grows with the steps averaged, for ``WeightAveraging``.

    At the ``n``-th update the decay is ``min(decay, (1 + n) / (warmup + n))``: the average
    spans about ``(warmup + n) / (warmup - 1)`` steps early on, so it follows the fast changes
    of the first steps instead of holding on to them, and reaches ``decay`` after about
    ``(decay * warmup - 1) / (1 - decay)`` steps (1,790 for 0.995 and 10). A fit of a few
    hundred steps thus averages over a share of its steps rather than a fixed number.
    ``warmup=None``: the decay is ``decay`` at every update.

    The average keeps the dtype the module had when the fit was set up: Lightning copies the
    module before its precision plugin converts it (to float64 under ``precision="64"``), so
    the current weights are cast to the average's dtype.
    """

    @torch.no_grad()
    def update(averaged: list[Tensor], current: list[Tensor], n_averaged: Tensor) -> None:
        n = float(n_averaged)
        step_decay = decay if warmup is None else min(decay, (1.0 + n) / (warmup + n))
        current = [c if c.dtype == a.dtype else c.to(a.dtype) for a, c in zip(averaged, current)]
        torch._foreach_lerp_(averaged, current, 1.0 - step_decay)

    return update


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
        steps of a fit; with a few dozen steps an epoch, use a smaller one, or ``warmup``.
    warmup
        ``None``: the decay is ``decay`` from the first step. An integer ``w >= 2``: the
        decay at the ``n``-th step is ``min(decay, (1 + n) / (w + n))``
        (:func:`ema_with_warmup`), so the span adapts to the steps a fit has taken.

    Examples
    --------
    >>> from reinpatch_forecast.darts import WeightEMA
    >>> trainer_kwargs = {"callbacks": [WeightEMA(decay=0.995)]}  # pl_trainer_kwargs
    """

    def __init__(self, decay: float = 0.995, warmup: int | None = None) -> None:
        if isinstance(decay, bool) or not isinstance(decay, (int, float)) or not 0 < decay < 1:
            raise ReinPatchInputError(
                f"decay must be a number strictly between 0 and 1 (the average's weight on its "
                f"previous value, per step; 0.995 spans about 200 steps), got {decay!r}."
            )
        if warmup is not None and (isinstance(warmup, bool) or not isinstance(warmup, int)
                                   or warmup < 2):
            raise ReinPatchInputError(
                f"warmup must be None or an integer of at least 2 (the decay at step n is "
                f"min(decay, (1 + n) / (warmup + n)); 10 is usual), got {warmup!r}."
            )
        super().__init__()
        self.decay = float(decay)
        self.warmup = warmup
        self._averaging: WeightAveraging | None = None
        self._validating = False

    def _average_fn(self) -> AverageFn:
        return ema_with_warmup(self.decay, self.warmup)

    # A fresh average for every fit: a second fit of the same model starts its own.
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage == "fit":
            self._averaging = WeightAveraging(multi_avg_fn=self._average_fn())
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
            self._validating = True  # the module holds the average, the copy the weights

    def on_validation_epoch_end(self, trainer: pl.Trainer,
                                pl_module: pl.LightningModule) -> None:
        if self._averaging is not None:
            self._averaging.on_validation_epoch_end(trainer, pl_module)
            self._validating = False

    # An interrupted fit (Ctrl+C, an error) leaves the module with the average, as a finished
    # one does and as its checkpoints hold.
    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                     exception: BaseException) -> None:
        if self._averaging is not None and not self._validating:
            self._averaging.on_train_end(trainer, pl_module)
        self._averaging, self._validating = None, False

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
        return {"decay": self.decay, "warmup": self.warmup}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.decay = float(state["decay"])
        self.warmup = state.get("warmup")
        self._averaging = None
