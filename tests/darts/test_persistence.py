"""Persistence gives identical forecasts (issue #8, item 3): darts face.

darts ``save``/``load``, ``load_weights`` and ``load_from_checkpoint`` (each also with
``map_location="cpu"``, how a model saved on a GPU is loaded on a CPU), and foundation patcher
files. The sktime face's: tests/sktime/test_sktime_persistence.py.
"""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
import torch
from darts.utils.likelihood_models.torch import QuantileRegression
from support import TINY_DARTS, assert_same_arrays, darts_series, sine_values

from reinpatch_forecast import ReinPatchModel
from reinpatch_forecast.patcher_io import load_patcher, save_patcher


@pytest.fixture(scope="module")
def series():
    return darts_series(sine_values(72))


def _forecasts(model, series, **kwargs) -> dict[str, np.ndarray]:
    """A forecast past the horizon; seeded samples and the parameters when probabilistic."""
    out = {"point": model.predict(5, series=series, random_state=1, **kwargs).all_values()}
    if model.likelihood is not None:
        out["samples"] = model.predict(3, series=series, num_samples=8, random_state=3,
                                       **kwargs).all_values()
        out["parameters"] = model.predict(3, series=series, predict_likelihood_parameters=True,
                                          **kwargs).all_values()
    return out


@pytest.mark.parametrize("likelihood", [None, "quantile"])
def test_darts_save_load_weights_and_checkpoints_identical(make_model, series, tmp_path,
                                                           likelihood):
    extra = {} if likelihood is None else {"likelihood": QuantileRegression([0.1, 0.5, 0.9])}
    model = make_model(TINY_DARTS, patcher="learned", n_epochs=2, save_checkpoints=True,
                       model_name=f"persist_{likelihood}", force_reset=True, **extra)
    model.fit(series)
    expected = _forecasts(model, series)
    path = str(tmp_path / "model.pt")
    model.save(path)

    loaded = {
        "load": ReinPatchModel.load(path),
        "load_cpu": ReinPatchModel.load(path, map_location="cpu"),
        "load_device": ReinPatchModel.load(path, map_location=torch.device("cpu")),
        "from_checkpoint": ReinPatchModel.load_from_checkpoint(
            model.model_name, work_dir=model.work_dir, best=False, map_location="cpu"),
    }
    for name in ("load_weights", "load_weights_cpu"):
        fresh = make_model(TINY_DARTS, patcher="learned", n_epochs=2, **extra)
        kwargs = {"map_location": "cpu"} if name.endswith("cpu") else {}
        fresh.load_weights(path, **kwargs)
        loaded[name] = fresh
    for name, other in loaded.items():
        assert next(other.model.parameters()).device.type == "cpu", name
        assert_same_arrays(_forecasts(other, series), expected, name)

    # and a reloaded model saves again to the same forecasts
    again = str(tmp_path / "again.pt")
    loaded["load"].save(again)
    assert_same_arrays(_forecasts(ReinPatchModel.load(again), series), expected)


def test_patch_boundaries_survive_save_load(make_model, series, tmp_path):
    model = make_model(TINY_DARTS, patcher="learned").fit(series)
    path = str(tmp_path / "model.pt")
    model.save(path)
    np.testing.assert_array_equal(ReinPatchModel.load(path).patch_boundaries(series).starts,
                                  model.patch_boundaries(series).starts)


def test_foundation_patcher_roundtrip(make_model, series, tmp_path):
    trained = make_model(TINY_DARTS, patcher="learned").fit(series)
    patcher = trained.model.network.patcher
    path = tmp_path / "patcher.pt"
    save_patcher(patcher, path)
    restored = load_patcher(path)
    for key, value in patcher.state_dict().items():
        torch.testing.assert_close(restored.state_dict()[key], value, rtol=0, atol=0)
    # used frozen in a new model, from the path: same boundaries on the same window
    reuse = make_model(TINY_DARTS, patcher=str(path), model_name="reuse").fit(series)
    np.testing.assert_array_equal(reuse.patch_boundaries(series).starts,
                                  trained.patch_boundaries(series).starts)


def test_a_model_logging_to_tensorboard_loads_without_trusted(make_model, tmp_path):
    """darts builds a TensorBoard logger for ``log_tensorboard=True``; the saved files leave it
    out (darts' safe loader refuses the class) and the loaded model rebuilds it."""
    from pytorch_lightning.loggers import TensorBoardLogger

    series = darts_series(sine_values(60))
    model = make_model(TINY_DARTS, log_tensorboard=True, save_checkpoints=True,
                       model_name="logged", pl_trainer_kwargs={
                           "accelerator": "cpu", "enable_progress_bar": False,
                           "enable_model_summary": False})
    model.fit(series, val_series=series)
    logs = os.path.join(model.work_dir, "logged", "logs")
    assert isinstance(model.trainer_params["logger"], TensorBoardLogger) and os.listdir(logs)
    expected = model.predict(3).values()
    model.save(str(tmp_path / "model.pt"))

    loaded = [ReinPatchModel.load(str(tmp_path / "model.pt")),  # no trusted=True
              ReinPatchModel.load_from_checkpoint("logged", work_dir=model.work_dir, best=False)]
    for again in loaded:
        np.testing.assert_array_equal(again.predict(3, series=series).values(), expected)
        logger = again.trainer_params["logger"]
        assert isinstance(logger, TensorBoardLogger) and logger.log_dir == logs
    # the reloaded model trains on, logging where the original did

    def last_write() -> int:
        return max(entry.stat().st_mtime_ns for entry in os.scandir(logs))

    before = last_write()
    loaded[0].fit(series, val_series=series, epochs=1)
    assert last_write() > before


def test_a_logger_given_by_the_user_is_kept_in_the_pickle(make_model):
    from pytorch_lightning.loggers import CSVLogger

    given = CSVLogger(save_dir=".")
    model = make_model(TINY_DARTS, pl_trainer_kwargs={"accelerator": "cpu", "logger": given})
    assert isinstance(pickle.loads(pickle.dumps(model)).trainer_params["logger"], CSVLogger)
