"""Training failures (issue #8, item 4): a non-finite loss stops training with a clear error,
and an interrupted fit leaves a usable model; the checkpoints written before stay loadable."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
import pytorch_lightning as pl
import torch
from darts.utils.serialization import add_safe_globals
from support import TINY_DARTS, darts_series, sine_values

from reinpatch_forecast import ReinPatchModel
from reinpatch_forecast._lightning import quiet_trainer_kwargs
from reinpatch_forecast.errors import TrainingDivergedError


class PoisonAtEpoch(pl.Callback):
    """Set the backbone's weights to NaN at the start of an epoch: the next loss is NaN."""

    def __init__(self, epoch: int = 1) -> None:
        self.epoch = epoch

    def on_train_epoch_start(self, trainer, module) -> None:
        if trainer.current_epoch == self.epoch:
            with torch.no_grad():
                for parameter in module.network.backbone_parameters():
                    parameter.fill_(float("nan"))


class InterruptAtEpoch(pl.Callback):
    """Press Ctrl+C at the start of an epoch."""

    def __init__(self, epoch: int = 1) -> None:
        self.epoch = epoch

    def on_train_epoch_start(self, trainer, module) -> None:
        if trainer.current_epoch == self.epoch:
            raise KeyboardInterrupt


class NanLossAfter(torch.nn.MSELoss):
    """An MSE loss that returns NaN from its ``calls``-th training call on."""

    def __init__(self, calls: int = 3) -> None:
        super().__init__()
        self.calls = calls
        self.count = 0

    def forward(self, prediction, target):
        self.count += 1
        loss = super().forward(prediction, target)
        return loss * float("nan") if self.count >= self.calls else loss


# The callbacks are stored in the model's pl_trainer_kwargs, which darts saves with the model:
# register them for darts' safe loading, as a user would.
add_safe_globals([PoisonAtEpoch, InterruptAtEpoch])


@pytest.fixture
def train_val():
    series = darts_series(sine_values(90))
    return series[:70], series[55:]


def _finite_state(model: ReinPatchModel) -> bool:
    return all(torch.isfinite(p).all() for p in model.model.state_dict().values()
               if p.is_floating_point())


def test_nan_loss_stops_training_with_a_clear_error(make_model, train_val):
    train, _ = train_val
    model = make_model(TINY_DARTS, n_epochs=3, loss_fn=NanLossAfter(calls=3))
    with pytest.raises(TrainingDivergedError,
                       match=r"Training diverged: the loss is not finite at epoch 0, step \d+ "
                             r"\(batch \d+ of the epoch\).* lower learning rate .*"
                             r"gradient_clip_val"):
        model.fit(train)
    assert issubclass(TrainingDivergedError, RuntimeError)


def test_best_checkpoint_before_divergence_is_intact(make_model, train_val):
    train, val = train_val
    model = make_model(TINY_DARTS, n_epochs=4, save_checkpoints=True, model_name="diverges",
                       force_reset=True,
                       pl_trainer_kwargs=quiet_trainer_kwargs(callbacks=[PoisonAtEpoch(epoch=2)]))
    with pytest.raises(TrainingDivergedError, match=r"at epoch 2, .*save_checkpoints=True"):
        model.fit(train, val_series=val)
    folder = os.path.join(model.work_dir, "diverges", "checkpoints")
    names = sorted(os.listdir(folder))
    assert any(name.startswith("best-") for name in names), names
    assert not any("epoch=2" in name for name in names), names
    for best in (True, False):
        restored = ReinPatchModel.load_from_checkpoint("diverges", work_dir=model.work_dir,
                                                       best=best)
        assert _finite_state(restored)
        forecast = restored.predict(3, series=train).values()
        assert np.isfinite(forecast).all()
    # training can go on from the restored weights with a safer setting
    restored.fit(train, epochs=1)
    assert np.isfinite(restored.predict(3, series=train).values()).all()


def test_keyboard_interrupt_leaves_a_usable_model(make_model, train_val):
    train, val = train_val
    handler = signal.getsignal(signal.SIGINT)
    model = make_model(TINY_DARTS, n_epochs=4, save_checkpoints=True, model_name="interrupted",
                       force_reset=True,
                       pl_trainer_kwargs=quiet_trainer_kwargs(
                           callbacks=[InterruptAtEpoch(epoch=2)]))
    # Lightning answers KeyboardInterrupt with sys.exit(1) and ignores SIGINT from then on;
    # ReinPatchModel.fit gives back a KeyboardInterrupt and restores the SIGINT handler.
    with pytest.raises(KeyboardInterrupt, match=r"interrupted in epoch 2.*load_from_checkpoint"):
        model.fit(train, val_series=val)
    assert signal.getsignal(signal.SIGINT) is handler

    in_memory = model.predict(3, series=train).values()
    assert np.isfinite(in_memory).all()
    last = ReinPatchModel.load_from_checkpoint("interrupted", work_dir=model.work_dir,
                                               best=False)
    np.testing.assert_array_equal(last.predict(3, series=train).values(), in_memory)
    best = ReinPatchModel.load_from_checkpoint("interrupted", work_dir=model.work_dir,
                                               best=True)
    assert np.isfinite(best.predict(3, series=train).values()).all()

    # the interrupted model also saves and loads with its weights
    path = os.path.join(model.work_dir, "interrupted.pt")
    model.save(path)
    np.testing.assert_array_equal(
        ReinPatchModel.load(path).predict(3, series=train).values(), in_memory
    )


def test_interrupted_first_fit_without_checkpoints_keeps_its_weights(make_model, train_val):
    train, _ = train_val
    model = make_model(TINY_DARTS, n_epochs=3, pl_trainer_kwargs=quiet_trainer_kwargs(
        callbacks=[InterruptAtEpoch(epoch=1)]))
    with pytest.raises(KeyboardInterrupt, match="interrupted in epoch 1"):
        model.fit(train)
    assert _finite_state(model)
    assert np.isfinite(model.predict(3).values()).all()


def test_gradient_clipping_is_passed_to_lightning(make_model, train_val):
    """The fix the divergence message suggests works as written."""
    train, _ = train_val
    model = make_model(TINY_DARTS, pl_trainer_kwargs=quiet_trainer_kwargs(gradient_clip_val=1.0))
    model.fit(train)
    assert model.trainer.gradient_clip_val == 1.0
    assert np.isfinite(model.predict(3).values()).all()
