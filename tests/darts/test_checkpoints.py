"""Checkpoints under stress: a fit killed with SIGKILL resumes from its last checkpoint, a
checkpoint write never leaves a half-written file under a checkpoint's name, a damaged
checkpoint is refused with a clear message, and models with default names never share
checkpoints (issue 18, items 2 and 3)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from support import TINY_DARTS, darts_series, sine_values, start_script

from reinpatch_forecast import ReinPatchModel
from reinpatch_forecast.darts import checkpoints
from reinpatch_forecast.darts.checkpoints import TEMPORARY_SUFFIX, AtomicCheckpointIO
from reinpatch_forecast.checks import check_saved_file

SCRIPT = Path(__file__).parent / "scripts" / "checkpointed_fit.py"
LENGTH = 300  # training series of the killed fit: an epoch of ~18 steps


def wait_for(condition, process, what: str, timeout: float = 240) -> None:
    """Poll ``condition()`` until it holds; fail with the script's output if ``process`` ends
    first or time runs out."""
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"the script ended before {what}:\n{out[-3000:]}\n{err[-3000:]}")
        if time.monotonic() > deadline:
            process.kill()
            out, err = process.communicate()
            pytest.fail(f"no {what} after {timeout} s:\n{err[-3000:]}")
        time.sleep(0.05)


def results(process) -> list[dict]:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, f"{out[-3000:]}\n{err[-3000:]}"
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert len(lines) == 1, out[-3000:]
    return json.loads(lines[0][len("RESULT "):])


def val_mse(model: ReinPatchModel, val) -> float:
    """MSE of the 3-step forecasts of every window of ``val``."""
    values = val.values()[:, 0]
    length, horizon = TINY_DARTS["input_chunk_length"], TINY_DARTS["output_chunk_length"]
    starts = range(len(values) - length - horizon + 1)
    forecasts = model.predict(horizon, series=[val[i:i + length] for i in starts])
    predicted = np.stack([f.values()[:, 0] for f in forecasts])
    target = np.stack([values[i + length:i + length + horizon] for i in starts])
    return float(np.mean((predicted - target) ** 2))


# -- kill and resume --------------------------------------------------------------------------
@pytest.mark.slow
def test_fit_killed_mid_epoch_resumes_from_its_last_checkpoint(tmp_path):
    folder = tmp_path / "killed" / "checkpoints"
    process = start_script(SCRIPT, str(tmp_path), "--model-name", "killed", "--epochs", "1000",
                           "--length", str(LENGTH))
    try:
        # the first checkpoint is written at the end of epoch 0: the kill lands in epoch 1
        # (or while its checkpoint is written, which must be just as safe)
        def has_checkpoint() -> bool:
            return folder.is_dir() and any(p.startswith("last-") for p in os.listdir(folder))

        wait_for(has_checkpoint, process, "checkpoint")
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.kill()
        process.communicate()
    assert process.returncode == -signal.SIGKILL

    # every file under a checkpoint name is complete; a write cut short is a hidden .partial
    names = os.listdir(folder)
    for name in names:
        assert name.endswith(".ckpt") or name.endswith(TEMPORARY_SUFFIX), names
        if name.endswith(".ckpt"):
            check_saved_file(folder / name, "checkpoint")

    at_checkpoint = ReinPatchModel.load_from_checkpoint("killed", work_dir=str(tmp_path),
                                                        best=False)
    epoch = int(re.search(r"last-epoch=(\d+)\.ckpt$", at_checkpoint.load_ckpt_path).group(1))
    resumed = ReinPatchModel.load_from_checkpoint("killed", work_dir=str(tmp_path), best=False)
    train = darts_series(sine_values(LENGTH, seed=0))  # what the script trained on
    # darts resumes the trainer from the checkpoint: `epochs` counts the epochs in all
    resumed.fit(train, epochs=epoch + 1 + 2)
    assert resumed.epochs_trained == epoch + 1 + 2  # went on from the checkpoint, 2 more

    assert np.isfinite(resumed.predict(3).values()).all()
    val = darts_series(sine_values(60, seed=1))
    assert val_mse(resumed, val) <= val_mse(at_checkpoint, val)


# -- atomic writes ----------------------------------------------------------------------------
class Killed(BaseException):
    """Stands for the end of the process in the middle of a write."""


def test_checkpoint_write_cut_short_leaves_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "checkpoints" / "last-epoch=0.ckpt"
    plugin = AtomicCheckpointIO()
    plugin.save_checkpoint({"weights": torch.arange(4.0)}, path)
    written = []
    real_save = torch.save

    def save_half_then_die(obj, file):
        written.append(file.name)
        real_save(obj, file)
        file.truncate(file.tell() // 2)
        raise Killed

    monkeypatch.setattr(checkpoints.torch, "save", save_half_then_die)
    with pytest.raises(Killed):
        plugin.save_checkpoint({"weights": torch.zeros(1000)}, path)

    # the bytes went to a hidden file beside the checkpoint, never under its name
    (temporary,) = written
    assert Path(temporary).parent == path.parent and Path(temporary).name.startswith(".")
    assert os.listdir(path.parent) == [path.name]  # removed, as the process lives on
    check_saved_file(path, "checkpoint")
    assert torch.equal(torch.load(path)["weights"], torch.arange(4.0))


def test_a_killed_write_leaves_a_partial_file_that_the_next_load_or_write_removes(tmp_path):
    # the script kills itself (SIGKILL) halfway through its second checkpoint write, epoch 1's
    process = start_script(SCRIPT, str(tmp_path), "--model-name", "killed", "--epochs", "3",
                           "--die-in-write", "2")
    out, err = process.communicate(timeout=300)
    assert process.returncode == -signal.SIGKILL, err[-3000:]
    folder = tmp_path / "killed" / "checkpoints"
    (partial,) = [name for name in os.listdir(folder) if name.endswith(TEMPORARY_SUFFIX)]
    assert partial.startswith(".") and f".{process.pid}-" in partial
    assert [name for name in os.listdir(folder) if name.startswith("last-")] == [
        "last-epoch=0.ckpt"]  # the write cut short never reached a checkpoint's name
    saved, loaded = tmp_path / "saved", tmp_path / "loaded"
    saved.mkdir()
    shutil.copy(folder / partial, saved / partial)

    # loading from the folder removes the dead process's file
    model = ReinPatchModel.load_from_checkpoint("killed", work_dir=str(tmp_path), best=False)
    assert os.listdir(folder) == ["last-epoch=0.ckpt"]
    # so does the next checkpoint write into a folder that holds one
    model.fit(darts_series(sine_values(60)), epochs=2)
    model.save(str(saved / "model.pt"))
    assert sorted(os.listdir(saved)) == ["model.pt", "model.pt.ckpt"]
    # and loading a saved model from one
    shutil.copytree(saved, loaded)
    shutil.copy(saved / "model.pt.ckpt", loaded / partial)
    np.testing.assert_array_equal(ReinPatchModel.load(str(loaded / "model.pt")).predict(
        3, series=darts_series(sine_values(60))).values(),
        model.predict(3, series=darts_series(sine_values(60))).values())
    assert sorted(os.listdir(loaded)) == ["model.pt", "model.pt.ckpt"]


def test_only_the_files_of_writes_that_cannot_finish_are_removed(tmp_path):
    live = Path(checkpoints.temporary_path(str(tmp_path / "last-epoch=3.ckpt")))  # this process
    other_machine = tmp_path / f".best.ckpt.another-host.{os.getpid()}-0123abcd{TEMPORARY_SUFFIX}"
    stale = tmp_path / f".last.ckpt.another-host.{os.getpid()}-4567abcd{TEMPORARY_SUFFIX}"
    unrelated = [tmp_path / "notes.partial", tmp_path / ".hidden"]
    for path in [live, other_machine, stale, *unrelated]:
        path.write_bytes(b"x")
    day_ago = time.time() - checkpoints.ABANDONED_AFTER_SECONDS - 60
    os.utime(stale, (day_ago, day_ago))

    assert checkpoints.remove_abandoned_writes(str(tmp_path)) == [str(stale)]
    assert all(path.exists() for path in [live, other_machine, *unrelated])
    assert checkpoints.remove_abandoned_writes(str(tmp_path / "missing")) == []


def test_truncated_or_corrupted_checkpoint_is_refused_with_a_clear_message(make_model):
    model = make_model(TINY_DARTS, save_checkpoints=True, model_name="damaged", force_reset=True)
    model.fit(darts_series(sine_values(60)))
    folder = os.path.join(model.work_dir, "damaged", "checkpoints")
    (name,) = os.listdir(folder)
    path = os.path.join(folder, name)
    data = open(path, "rb").read()

    open(path, "wb").write(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"The checkpoint .*last-epoch=0\.ckpt.* \(\d+ bytes\) "
                                         r"is truncated or corrupted"):
        ReinPatchModel.load_from_checkpoint("damaged", work_dir=model.work_dir, best=False)

    damaged = bytearray(data)
    middle = len(damaged) // 2
    damaged[middle:middle + 16] = bytes(255 - b for b in damaged[middle:middle + 16])
    open(path, "wb").write(bytes(damaged))
    with pytest.raises(ValueError, match=r"The checkpoint .* is (corrupted|truncated)"):
        ReinPatchModel.load_from_checkpoint("damaged", work_dir=model.work_dir, file_name=name)


# -- default model names ----------------------------------------------------------------------
DEFAULT_NAME = r"\d{4}-\d\d-\d\d_\d\d_\d\d_\d\d_torch_model_run_\d+_[0-9a-f]{8}"


def test_default_model_names_are_unique_and_a_given_name_is_kept(tmp_path):
    sizes = dict(input_chunk_length=12, output_chunk_length=3, work_dir=str(tmp_path))
    first, second = ReinPatchModel(**sizes), ReinPatchModel(**sizes)  # within one second
    for model in (first, second):
        assert re.fullmatch(DEFAULT_NAME, model.model_name), model.model_name
        assert f"_run_{os.getpid()}_" in model.model_name
        assert "model_name" not in model.model_params
    assert first.model_name != second.model_name
    assert first.untrained_model().model_name not in (first.model_name, second.model_name)
    assert ReinPatchModel(model_name="mine", **sizes).model_name == "mine"


def test_a_work_dir_created_by_another_process_meanwhile_is_used(tmp_path, monkeypatch):
    """The race two processes starting together run into: darts checks that the work dir
    exists, then creates it; here another process creates every folder between the check and
    the creation (darts alone fails with FileExistsError)."""
    real_mkdir = os.mkdir

    def mkdir_after_another_process(path, mode=0o777, **kwargs):
        try:
            real_mkdir(path, mode)  # the other process is first
        except FileExistsError:
            pass
        real_mkdir(path, mode, **kwargs)  # FileExistsError, unless the folder was not missing

    monkeypatch.setattr(os, "mkdir", mkdir_after_another_process)
    work_dir = tmp_path / "darts_logs"
    ReinPatchModel(input_chunk_length=12, output_chunk_length=3, work_dir=str(work_dir),
                   save_checkpoints=True, model_name="first")
    ReinPatchModel(input_chunk_length=12, output_chunk_length=3, work_dir=str(work_dir),
                   save_checkpoints=True, model_name="second")
    assert (work_dir / "first").is_dir() and (work_dir / "second").is_dir()


@pytest.mark.slow
def test_processes_and_models_with_default_names_keep_their_own_checkpoints(tmp_path):
    """Two processes started together in one working directory, each creating two models in
    the same second, all with save_checkpoints=True and no model_name."""
    go = tmp_path / "go"
    processes = [
        start_script(SCRIPT, str(tmp_path), "--models", "2", "--seed",
                     str(seed), "--wait-for", str(go))
        for seed in (0, 10)
    ]
    for process in processes:
        wait_for(lambda: len(list(tmp_path.glob("ready.*"))) == 2, process, "both ready")
    go.touch()  # both processes create their models now
    runs = [run for process in processes for run in results(process)]

    for run in runs:
        assert Path(run["work_dir"]) == tmp_path / "darts_logs"  # darts' default work_dir
        restored = ReinPatchModel.load_from_checkpoint(run["model_name"],
                                                       work_dir=run["work_dir"], best=False)
        series = darts_series(sine_values(60, seed=run["seed"]))
        np.testing.assert_array_equal(restored.predict(3, series=series).values().ravel(),
                                      np.array(run["forecast"], dtype=np.float32),
                                      err_msg=run["model_name"])
    names = [run["model_name"] for run in runs]
    assert len(set(names)) == 4, names


def test_a_checkpoint_keeps_the_patchers_sampling_generator(make_model):
    """A module built from a checkpoint draws the patcher's samples where the saved one left
    off, whatever torch's global generator holds at load: every fit resumed from the same
    checkpoint then trains the same."""
    model = make_model(TINY_DARTS, n_epochs=1, save_checkpoints=True, force_reset=True,
                       model_name="sampling").fit(darts_series(sine_values(120)))
    expected = model.model.network.sampling_state()
    for seed in (1, 2):
        torch.manual_seed(seed)
        loaded = ReinPatchModel.load_from_checkpoint("sampling", work_dir=model.work_dir,
                                                     best=False)
        state = loaded.model.network.sampling_state()
        assert state["seed"] == expected["seed"]
        assert torch.equal(state["cpu_state"], expected["cpu_state"])
