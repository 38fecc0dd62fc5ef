"""An exponential moving average of the weights, as a Lightning callback darts can save.

Lightning's ``WeightAveraging`` keeps an average of the module's weights during training,
validates with it and leaves it in the module when training ends (and in the checkpoints, so
darts' ``load_best`` restores it). Its exponential form takes a function
(``torch.optim.swa_utils.get_ema_multi_avg_fn``) that cannot be pickled, while darts pickles
the trainer arguments with the model (``save_checkpoints=True``, ``save``). :class:`WeightEMA`
holds the decay instead and builds the function when training starts.
"""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
from pytorch_lightning.callbacks import WeightAveraging
from torch.optim.swa_utils import get_ema_multi_avg_fn

from ..errors import ReinPatchInputError

__all__ = ["WeightEMA"]


class WeightEMA(WeightAveraging):
    """Validate and predict with an exponential moving average of the weights.

    After every optimizer step, ``average <- decay * average + (1 - decay) * weights`` (the
    buffers too). Validation, early stopping and the checkpoints see the average; after
    training the module holds it. Prediction costs nothing more.

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

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._kwargs["multi_avg_fn"] = get_ema_multi_avg_fn(self.decay)
        super().setup(trainer, pl_module, stage)

    def __getstate__(self) -> dict[str, Any]:
        # a pickled model keeps the decay and the step counters, not the average or its function
        return {**self.__dict__, "_kwargs": {}, "_average_model": None}
