"""WeightEMA: darts fits, validates, saves and loads a model with an exponential moving
average of its weights, and the model predicts with the average."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from support import TINY_DARTS, noisy_sine

from reinpatch_forecast import ReinPatchModel
from reinpatch_forecast._lightning import quiet_trainer_kwargs
from reinpatch_forecast.darts import WeightEMA


def _fit(make_model, decay: float | None, validate: bool = True, **overrides) -> ReinPatchModel:
    callbacks = [] if decay is None else [WeightEMA(decay)]
    series = noisy_sine(length=300)
    model = make_model(TINY_DARTS, n_epochs=2, save_checkpoints=True, force_reset=True,
                       pl_trainer_kwargs=quiet_trainer_kwargs(callbacks=callbacks), **overrides)
    if not validate:
        return model.fit(series[:260])
    return model.fit(series[:260], val_series=series[-(12 + 30):], load_best=True)


def test_the_module_ends_with_the_average_of_its_weights(make_model):
    """After training the module holds the callback's average, not the last step's weights."""
    model = _fit(make_model, 0.5, validate=False, model_name="ema")
    (callback,) = [c for c in model.trainer.callbacks if isinstance(c, WeightEMA)]
    averaged = dict(callback._average_model.module.named_parameters())
    for name, value in model.model.named_parameters():
        torch.testing.assert_close(value, averaged[name], rtol=0, atol=0)
    plain = _fit(make_model, None, validate=False, model_name="plain")
    assert not np.array_equal(model.predict(3).values(), plain.predict(3).values())


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


def test_a_pickled_callback_keeps_its_decay_not_its_average(make_model):
    model = _fit(make_model, 0.8, model_name="pickled")
    (callback,) = [c for c in model.trainer.callbacks if isinstance(c, WeightEMA)]
    assert callback._average_model is not None
    clone = copy.deepcopy(callback.__getstate__())
    assert clone["decay"] == 0.8 and clone["_average_model"] is None and clone["_kwargs"] == {}


@pytest.mark.parametrize("decay", [0, 1, 1.5, -0.1, True, "0.9", None])
def test_a_decay_outside_0_1_is_refused(decay):
    with pytest.raises(ValueError, match=r"decay must be a number strictly between 0 and 1"):
        WeightEMA(decay)
