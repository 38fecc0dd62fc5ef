"""Bad inputs to the darts face (issue #8, table 1): one parametrized test per row.

Each row builds an input, calls the public entry (construction, ``fit``, ``predict``, ``load``)
and expects either a clear error (type and a message naming the problem and the fix) or a
correct result. Never a bare traceback from inside torch or darts.
"""

from __future__ import annotations

import functools
import os
import shutil
import struct
import zipfile
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest
import torch
from support import TINY_DARTS, darts_model, darts_series, sine_values

from reinpatch_forecast import ReinPatchModel
from reinpatch_forecast.patcher_io import load_patcher, save_patcher
from reinpatch_forecast.nn import LearnedPatcher


@dataclass
class Case:
    """One row: ``run(ctx)`` performs the call; either it raises ``raises`` matching ``match``,
    or its result passes ``check``."""

    id: str
    run: Callable[["Context"], Any]
    raises: type[BaseException] | None = None
    match: str | None = None
    check: Callable[[Any], None] | None = None


@dataclass
class Context:
    make: Callable[..., ReinPatchModel]
    trained: ReinPatchModel
    saved: str  # path of the trained model saved with ReinPatchModel.save
    patcher_file: str  # a foundation patcher saved with save_patcher
    tmp: str

    def copy_saved(self) -> str:
        """A fresh copy of the saved model (MODEL and MODEL.ckpt) to damage."""
        folder = os.path.join(self.tmp, f"copy{len(os.listdir(self.tmp))}")
        os.makedirs(folder)
        target = os.path.join(folder, "model.pt")
        shutil.copy(self.saved, target)
        shutil.copy(self.saved + ".ckpt", target + ".ckpt")
        return target


@pytest.fixture(scope="module")
def context(tmp_path_factory) -> Context:
    tmp = tmp_path_factory.mktemp("darts_bad_inputs")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)

    make = functools.partial(darts_model, tmp, TINY_DARTS)
    trained = make().fit(darts_series(sine_values(60)))
    saved = str(tmp / "trained.pt")
    trained.save(saved)
    patcher_file = str(tmp / "patcher.pt")
    save_patcher(LearnedPatcher(hidden_size=8, n_layers=1), patcher_file)
    scratch = tmp / "scratch"
    scratch.mkdir()
    torch.set_num_threads(threads)
    return Context(make, trained, saved, patcher_file, str(scratch))


# -- input builders ----------------------------------------------------------------------------
def with_value(value, at: int = 10, length: int = 60):
    values = sine_values(length)
    values[at] = value
    return darts_series(values)


def fit_predict(series, **params):
    def run(ctx: Context):
        return ctx.make(**params).fit(series).predict(3)
    return run


def truncate(path: str, keep: float) -> None:
    data = open(path, "rb").read()
    open(path, "wb").write(data[: int(len(data) * keep)])


def flip_bytes(path: str, where: float) -> None:
    data = bytearray(open(path, "rb").read())
    i = int(len(data) * where)
    data[i:i + 16] = bytes(255 - b for b in data[i:i + 16])
    open(path, "wb").write(bytes(data))


def flip_largest_part(path: str) -> None:
    """Flip 16 bytes in the middle of the largest member of a zip file (torch.save's format):
    a tensor's storage, whatever the file's layout."""
    with zipfile.ZipFile(path) as archive:
        member = max(archive.infolist(), key=lambda info: info.file_size)
    data = bytearray(open(path, "rb").read())
    header = member.header_offset
    name_length, extra_length = struct.unpack("<HH", data[header + 26:header + 30])
    start = header + 30 + name_length + extra_length + member.compress_size // 2
    data[start:start + 16] = bytes(255 - b for b in data[start:start + 16])
    open(path, "wb").write(bytes(data))


def load_damaged(damage: Callable[[str], None], which: str = "", loader: str = "load"):
    def run(ctx: Context):
        path = ctx.copy_saved()
        damage(path + which)
        if loader == "load":
            return ReinPatchModel.load(path)
        return ctx.make().load_weights(path)
    return run


def write_file(name: str, payload) -> Callable[[Context], str]:
    def build(ctx: Context) -> str:
        path = os.path.join(ctx.tmp, name)
        if isinstance(payload, bytes):
            open(path, "wb").write(payload)
        else:
            torch.save(payload, path)
        return path
    return build


# -- checks ------------------------------------------------------------------------------------
def finite_forecast(prediction) -> None:
    values = prediction.values()
    assert values.shape == (3, 1)
    assert np.isfinite(values).all(), values


def forecasts_the_constant(constant: float):
    def check(prediction) -> None:
        values = prediction.values()
        assert np.isfinite(values).all()
        # RevIN's eps (1e-5 on the variance) leaves a deviation of at most ~sqrt(eps)
        np.testing.assert_allclose(values, constant, rtol=1e-5, atol=1e-2)
    return check


def within_scale(low: float, high: float):
    """Finite, and inside the data's range widened by its own width on both sides."""
    def check(prediction) -> None:
        values = prediction.values()
        assert np.isfinite(values).all()
        width = high - low
        assert (values > low - width).all() and (values < high + width).all(), values
    return check


FIX_GAPS = r"fill missing values .* replace or clip infinite"
CASES = [
    # -- values ---------------------------------------------------------------------------------
    Case("nan_in_target", fit_predict(with_value(np.nan)), ValueError,
         r"`series` contains 1 NaN value in column\(s\) 'c0' \(first at 2020-01-01 10:00:00\)\. "
         r".*" + FIX_GAPS),
    Case("inf_in_target", fit_predict(with_value(np.inf)), ValueError,
         r"`series` contains 1 infinite value .*" + FIX_GAPS),
    Case("minus_inf_in_val_series",
         lambda ctx: ctx.make().fit(darts_series(sine_values(60)),
                                    val_series=with_value(-np.inf, at=3, length=30)),
         ValueError, r"`val_series` contains 1 infinite value"),
    Case("nan_in_one_series_of_a_list",
         lambda ctx: ctx.make().fit([darts_series(sine_values(60)), with_value(np.nan)]),
         ValueError, r"`series\[1\]` contains 1 NaN value"),
    Case("nan_in_the_window_predict_reads",
         lambda ctx: ctx.trained.predict(3, series=with_value(np.nan, at=55)), ValueError,
         r"The last 12 steps of `series` \(the window the forecast reads\) contains 1 NaN value "
         r"in column\(s\) 'c0' \(first at"),
    Case("nan_before_the_window_predict_reads_is_ignored",
         lambda ctx: ctx.trained.predict(3, series=with_value(np.nan, at=5)),
         check=finite_forecast),
    Case("values_beyond_float32_squares",
         fit_predict(darts_series(sine_values(60, scale=1e20))), ValueError,
         r"values up to .*e\+20 in magnitude .* beyond 1e\+18: .* Rescale the series"),
    Case("constant_series", fit_predict(darts_series(np.full(60, 5.0))),
         check=forecasts_the_constant(5.0)),
    Case("constant_zero_series", fit_predict(darts_series(np.zeros(60))),
         check=forecasts_the_constant(0.0)),
    Case("constant_large_series", fit_predict(darts_series(np.full(60, -3e7))),
         check=forecasts_the_constant(-3e7)),
    Case("values_near_1e12", fit_predict(darts_series(sine_values(60, 1e12, offset=5e12))),
         check=within_scale(3.5e12, 6.5e12)),
    Case("values_near_1e-12", fit_predict(darts_series(sine_values(60, 1e-12, offset=5e-12))),
         check=finite_forecast),
    # -- lengths --------------------------------------------------------------------------------
    Case("shorter_than_lookback_plus_horizon",
         fit_predict(darts_series(sine_values(14))), ValueError,
         r"`series` has 14 time steps, but a training window \(input_chunk_length=12 \+ "
         r"output_chunk_length=3\) needs at least 15\. Pass a longer series, or use a smaller"),
    Case("empty_series", fit_predict(darts_series(np.zeros((0, 1)))), ValueError,
         r"`series` has 0 time steps, .* needs at least 15"),
    Case("one_series_of_a_list_too_short",
         lambda ctx: ctx.make().fit([darts_series(sine_values(60)), darts_series(sine_values(10))]),
         ValueError, r"`series\[1\]` has 10 time steps, .* needs at least 15"),
    Case("empty_list_of_series", lambda ctx: ctx.make().fit([]), ValueError,
         r"`series` is an empty list"),
    Case("val_series_too_short",
         lambda ctx: ctx.make().fit(darts_series(sine_values(60)),
                                    val_series=darts_series(sine_values(8))),
         ValueError, r"`val_series` has 8 time steps"),
    Case("predict_series_shorter_than_lookback",
         lambda ctx: ctx.trained.predict(3, series=darts_series(sine_values(8))), ValueError,
         r"`series` has 8 time steps, but a forecast \(input_chunk_length=12\) needs at least 12"),
    Case("predict_further_than_the_horizon_is_autoregressive",
         lambda ctx: ctx.trained.predict(7).values(),
         check=lambda values: (values.shape == (7, 1) and np.isfinite(values).all()) or
         pytest.fail(f"{values}")),
    # -- parameters -----------------------------------------------------------------------------
    Case("compression_rate_larger_than_lookback",
         lambda ctx: ctx.make(compression_rate=13), ValueError,
         r"compression_rate=13 is larger than the lookback input_chunk_length=12.* Use a "
         r"compression_rate <= 12 or a longer lookback"),
    Case("compression_rate_below_1", lambda ctx: ctx.make(compression_rate=0.5), ValueError,
         r"compression_rate must be >= 1 .* Use compression_rate=1"),
    Case("compression_rate_nan", lambda ctx: ctx.make(compression_rate=float("nan")),
         ValueError, r"compression_rate must be a finite number >= 1"),
    Case("group_size_0", lambda ctx: ctx.make(group_size=0), ValueError,
         r"group_size must be a positive integer \(patchings sampled per series"),
    Case("group_size_1_is_fine_with_learned_patcher",
         lambda ctx: ctx.make(patcher="learned", group_size=1).fit(
             darts_series(sine_values(60))).predict(3),
         check=finite_forecast),
    Case("policy_is_not_an_argument", lambda ctx: ctx.make(policy="greedy"), ValueError,
         r"no args/kwargs .*policy"),
    Case("group_size_1_is_fine_with_uniform_patcher",
         lambda ctx: ctx.make(patcher="uniform", group_size=1).fit(
             darts_series(sine_values(60))).predict(3),
         check=finite_forecast),
    Case("predict_before_fit", lambda ctx: ctx.make().predict(3), ValueError,
         r"not trained yet: call fit\(\) before predict\(\), or load a trained model"),
    Case("predict_before_fit_with_series",
         lambda ctx: ctx.make().predict(3, series=darts_series(sine_values(60))), ValueError,
         r"not trained yet"),
    Case("boundaries_before_fit", lambda ctx: ctx.make().patch_boundaries(), ValueError,
         r"not trained yet: call fit\(\)"),
    # -- saved models ---------------------------------------------------------------------------
    Case("load_missing_file",
         lambda ctx: ReinPatchModel.load(os.path.join(ctx.tmp, "nowhere.pt")),
         FileNotFoundError, r"No saved model at .*nowhere\.pt"),
    Case("load_truncated_model_file", load_damaged(lambda p: truncate(p, 0.5)), ValueError,
         r"The saved model '.*model\.pt' \(\d+ bytes\) is truncated or corrupted.* Re-save"),
    Case("load_empty_model_file", load_damaged(lambda p: truncate(p, 0.0)), ValueError,
         r"The saved model '.*model\.pt' \(0 bytes\) is truncated"),
    Case("load_truncated_checkpoint", load_damaged(lambda p: truncate(p, 0.9), ".ckpt"),
         ValueError,
         r"The checkpoint of the saved model '.*model\.pt\.ckpt' .* is truncated or corrupted"
         r".* Re-save the model"),
    Case("load_corrupted_checkpoint", load_damaged(flip_largest_part, ".ckpt"),
         ValueError, r"'.*model\.pt\.ckpt' is corrupted: its part '.*' fails its checksum"),
    Case("load_corrupted_model_file", load_damaged(lambda p: flip_bytes(p, 0.3)),
         ValueError, r"'.*model\.pt' is corrupted: its part '.*' fails its checksum"),
    Case("load_weights_truncated_checkpoint",
         load_damaged(lambda p: truncate(p, 0.5), ".ckpt", loader="load_weights"), ValueError,
         r"'.*model\.pt\.ckpt' .* is truncated or corrupted"),
    Case("load_a_file_that_is_not_a_model",
         lambda ctx: ReinPatchModel.load(write_file("text.pt", b"not a model\n" * 20)(ctx)),
         ValueError, r"is truncated or corrupted: it is not a file written by torch\.save"),
    Case("load_a_patcher_file_as_a_model",
         lambda ctx: ReinPatchModel.load(ctx.patcher_file), ValueError,
         r"Cannot load '.*patcher\.pt' as a ReinPatchModel .* not a model saved with "
         r"ReinPatchModel\.save"),
    # -- foundation patcher files -----------------------------------------------------------------
    Case("load_patcher_of_another_format",
         lambda ctx: load_patcher(write_file("other.pt", {"weights": torch.zeros(3)})(ctx)),
         ValueError, r"is not a reinpatch-forecast patcher \(expected format "
         r"'reinpatch-forecast/patcher'\)\. Save patchers with .*save_patcher"),
    Case("model_with_patcher_file_of_another_format",
         lambda ctx: ctx.make(patcher=write_file("other2.pt", {"weights": torch.zeros(3)})(ctx)),
         ValueError, r"is not a reinpatch-forecast patcher"),
    Case("model_with_a_saved_model_as_patcher",
         lambda ctx: ctx.make(patcher=ctx.saved + ".ckpt"), ValueError,
         r"Cannot read the patcher file '.*\.ckpt': it is truncated, corrupted or not a "
         r"patcher saved by reinpatch-forecast"),
    Case("patcher_file_of_another_version",
         lambda ctx: ctx.make(patcher=write_file("v99.pt", {
             "format": "reinpatch-forecast/patcher", "version": 99, "config": {},
             "state_dict": {}})(ctx)),
         ValueError, r"has patcher format version 99; .* Pretrain a new patcher"),
    Case("truncated_patcher_file",
         lambda ctx: ctx.make(patcher=(lambda path: (truncate(path, 0.5), path)[1])(
             shutil.copy(ctx.patcher_file, os.path.join(ctx.tmp, "cut_patcher.pt")))),
         ValueError, r"Cannot read the patcher file .*cut_patcher\.pt.* truncated"),
    Case("patcher_path_that_does_not_exist",
         lambda ctx: ctx.make(patcher=os.path.join(ctx.tmp, "missing_patcher.pt")), ValueError,
         r"patcher must be one of 'learned', .* or the path of a patcher file saved with "
         r".*missing_patcher\.pt.* \(no such file\)"),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input(case: Case, context: Context):
    if case.raises is not None:
        with pytest.raises(case.raises, match=case.match):
            case.run(context)
    else:
        case.check(case.run(context))


def test_model_saved_on_a_gpu_says_map_location(context: Context, monkeypatch):
    """No GPU here: simulate torch's error for CUDA tensors on a CPU-only machine."""
    from darts.models.forecasting.torch_forecasting_model import TorchForecastingModel

    def cuda_error(*args, **kwargs):
        raise RuntimeError(
            "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
            "is False. If you are running on a CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the CPU."
        )

    monkeypatch.setattr(TorchForecastingModel, "load", staticmethod(cuda_error))
    with pytest.raises(RuntimeError, match=r"saved on a GPU .* map_location='cpu'"):
        ReinPatchModel.load(context.saved)


def test_tiny_scale_forecast_keeps_the_scale(context: Context):
    """A series on a ~1e-12 scale is forecast on its own scale (RevIN's floor is relative)."""
    prediction = fit_predict(darts_series(sine_values(60, 1e-12, offset=5e-12)))(context)
    within_scale(3.5e-12, 6.5e-12)(prediction)


def test_foundation_load_patcher_roundtrip_and_error_type(context: Context):
    patcher = load_patcher(context.patcher_file)
    assert isinstance(patcher, LearnedPatcher)
    with pytest.raises(FileNotFoundError, match="No patcher file"):
        load_patcher(os.path.join(context.tmp, "nope.pt"))
