"""WeightEMA: darts fits, validates, saves and loads a model with an exponential moving
average of its weights, and the model predicts with the average."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import pytorch_lightning as pl
import torch
from support import TINY_DARTS, noisy_sine

from reinpatch_forecast import ReinPatchModel
from reinpatch_forecast.errors import ReinPatchInputError
from reinpatch_forecast._lightning import quiet_trainer_kwargs
from reinpatch_forecast.darts import WeightEMA


class RecordSteps(pl.Callback):
    """The module's parameters after every optimizer step of the latest fit."""

    def __init__(self) -> None:
        self.steps: list[dict[str, torch.Tensor]] = []

    def on_train_start(self, trainer, pl_module) -> None:
        self.steps = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.steps.append({name: value.detach().clone()
                           for name, value in pl_module.named_parameters()})


class PickleDuringFit(pl.Callback):
    """Pickles the model's WeightEMA at the end of training, while it holds its average."""

    def on_train_end(self, trainer, pl_module) -> None:
        (ema,) = [c for c in trainer.callbacks if isinstance(c, WeightEMA)]
        self.pickled = pickle.dumps(ema)


def _fit(make_model, decay: float | None, validate: bool = True, callbacks=(),
         warmup: int | None = None, **overrides) -> ReinPatchModel:
    callbacks = [*callbacks, *([] if decay is None else [WeightEMA(decay, warmup)])]
    if decay is None:  # no average at all, not the default one
        overrides.setdefault("ema_decay", None)
    series = noisy_sine(length=300)
    model = make_model(TINY_DARTS, n_epochs=2, save_checkpoints=True, force_reset=True,
                       pl_trainer_kwargs=quiet_trainer_kwargs(callbacks=callbacks), **overrides)
    if not validate:
        return model.fit(series[:260])
    return model.fit(series[:260], val_series=series[-(12 + 30):], load_best=True)


def _exponential_average(steps: list[dict[str, torch.Tensor]], decay: float,
                         warmup: int | None = None) -> dict:
    average = dict(steps[0])
    for n, weights in enumerate(steps[1:], start=1):
        step_decay = decay if warmup is None else min(decay, (1 + n) / (warmup + n))
        average = {name: value + (1 - step_decay) * (weights[name] - value)
                   for name, value in average.items()}
    return average


def _assert_holds_the_average(model: ReinPatchModel, recorder: RecordSteps, decay: float,
                              warmup: int | None = None):
    assert len(recorder.steps) > 2
    expected = _exponential_average(recorder.steps, decay, warmup)
    for name, value in model.model.named_parameters():
        torch.testing.assert_close(value, expected[name], rtol=1e-5, atol=1e-6)
    # and not the last step's weights
    assert any(not torch.equal(value, recorder.steps[-1][name])
               for name, value in model.model.named_parameters())


def test_the_module_ends_with_the_average_of_its_weights(make_model):
    """After training the module holds the exponential average of the weights of every step,
    and a second fit of the same model averages its own steps."""
    recorder = RecordSteps()
    model = _fit(make_model, 0.5, validate=False, callbacks=[recorder], model_name="ema")
    _assert_holds_the_average(model, recorder, 0.5)
    first = model.predict(3).values()
    model.fit(noisy_sine(length=300)[:260])
    _assert_holds_the_average(model, recorder, 0.5)
    assert not np.array_equal(model.predict(3).values(), first)
    plain = _fit(make_model, None, validate=False, model_name="plain")
    assert not np.array_equal(first, plain.predict(3).values())


def test_with_warmup_the_decay_grows_with_the_steps_averaged(make_model):
    """``warmup=w``: the n-th update uses ``min(decay, (1 + n) / (w + n))``, so a short fit's
    average follows its later steps more than a constant decay's does."""
    recorder = RecordSteps()
    model = _fit(make_model, 0.99, validate=False, callbacks=[recorder], warmup=3,
                 model_name="warm")
    _assert_holds_the_average(model, recorder, 0.99, warmup=3)
    constant = _exponential_average(recorder.steps, 0.99)
    last = recorder.steps[-1]
    assert sum(float((p - last[n]).abs().sum()) for n, p in model.model.named_parameters()) < \
        sum(float((constant[n] - last[n]).abs().sum()) for n in last)


def test_by_default_the_model_keeps_an_average_whose_decay_warms_up(make_model):
    """Without ``ema_decay`` the model averages with decay 0.995 and warmup 10; with
    ``ema_decay=None`` it keeps the last step's weights."""
    recorder = RecordSteps()
    series = noisy_sine(length=300)[:260]
    model = make_model(TINY_DARTS, n_epochs=2, pl_trainer_kwargs=quiet_trainer_kwargs(
        callbacks=[recorder])).fit(series)
    _assert_holds_the_average(model, recorder, 0.995, warmup=10)
    plain = make_model(TINY_DARTS, n_epochs=2, ema_decay=None,
                       pl_trainer_kwargs=quiet_trainer_kwargs(callbacks=[recorder])).fit(series)
    for name, value in plain.model.named_parameters():
        assert torch.equal(value, recorder.steps[-1][name])


def test_a_given_averaging_callback_replaces_the_default_one(make_model):
    model = _fit(make_model, 0.9, validate=False, ema_decay=0.995)
    (average,) = [c for c in model.trainer.callbacks
                  if isinstance(c, (WeightEMA, pl.callbacks.WeightAveraging))]
    assert average.decay == 0.9


@pytest.mark.parametrize("ema_decay", [0, 1, 1.5, -0.1, True, "0.99"])
def test_an_ema_decay_outside_0_1_is_refused_when_the_model_is_built(ema_decay):
    with pytest.raises(ReinPatchInputError, match="ema_decay must be None"):
        ReinPatchModel(input_chunk_length=24, output_chunk_length=6, ema_decay=ema_decay)


def test_same_seed_same_forecast_and_save_load_identical(make_model, tmp_path):
    first = _fit(make_model, 0.9, model_name="first")
    second = _fit(make_model, 0.9, model_name="second")
    np.testing.assert_array_equal(first.predict(3).values(), second.predict(3).values())
    path = str(tmp_path / "ema.pt")
    first.save(path)
    loaded = ReinPatchModel.load(path)  # without trusted=True: darts' safe loader reads it
    np.testing.assert_array_equal(loaded.predict(3).values(), first.predict(3).values())
    restored = ReinPatchModel.load_from_checkpoint("first", work_dir=first.work_dir, best=True)
    np.testing.assert_array_equal(restored.predict(3).values(), first.predict(3).values())


def test_a_fit_resumed_from_a_checkpoint_trains_on(make_model):
    model = _fit(make_model, 0.9, validate=False, model_name="resumed")
    trained = model.predict(3).values()
    # both read the checkpoint of the first fit before either resumed fit writes its own
    loaded = [ReinPatchModel.load_from_checkpoint("resumed", work_dir=model.work_dir,
                                                  best=False) for _ in range(2)]
    resumed = [copy.fit(noisy_sine(length=300)[:260], epochs=3).predict(3).values()
               for copy in loaded]
    np.testing.assert_array_equal(resumed[0], resumed[1])
    assert np.isfinite(resumed[0]).all() and not np.array_equal(resumed[0], trained)


def test_a_pickled_callback_keeps_its_decay_not_its_average(make_model):
    probe = PickleDuringFit()
    model = _fit(make_model, 0.8, callbacks=[probe], model_name="pickled")
    clone = pickle.loads(probe.pickled)
    assert isinstance(clone, WeightEMA) and clone.decay == 0.8 and clone.warmup is None
    assert pickle.loads(pickle.dumps(WeightEMA(0.9, warmup=10))).warmup == 10
    assert len(probe.pickled) == len(pickle.dumps(WeightEMA(0.8)))
    # the clone trains as a new callback does
    again = _fit(make_model, None, callbacks=[clone], model_name="again")
    fresh = _fit(make_model, 0.8, model_name="fresh")
    np.testing.assert_array_equal(again.predict(3).values(), fresh.predict(3).values())
    assert model.predict(3).values().shape == (3, 1)


@pytest.mark.parametrize("warmup", [1, 0, -3, 2.5, True, "10"])
def test_a_warmup_below_2_or_not_an_integer_is_refused(warmup):
    with pytest.raises(ValueError, match=r"warmup must be None or an integer of at least 2"):
        WeightEMA(0.99, warmup)


@pytest.mark.parametrize("decay", [0, 1, 1.5, -0.1, True, "0.9", None])
def test_a_decay_outside_0_1_is_refused(decay):
    with pytest.raises(ValueError, match=r"decay must be a number strictly between 0 and 1"):
        WeightEMA(decay)
