"""Lightning's output around a darts user's fit, predict and ``to_onnx``: its start-up lines
where darts shows its progress (as for darts' own models), none with ``verbose=False``; no
process-wide logging or warning state changed, also by fits in concurrent threads; real
warnings still show.

The output itself is read in a fresh process (``scripts/quiet_fit_predict_export.py``), so
that it is the real one and no earlier test has already shown a once-only warning.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import warnings
from pathlib import Path

import pytest
import pytorch_lightning as pl
from support import TINY_DARTS, noisy_sine, run_script

from reinpatch_forecast._lightning import quiet_lightning, quiet_trainer_kwargs

SCRIPT = Path(__file__).parent / "scripts" / "quiet_fit_predict_export.py"
MARKERS = ("--- verbose=False ---", "--- a model whose callback warns ---")

#: Lines of Lightning's progress bars (rich or tqdm; a tqdm bar redraws with carriage returns).
PROGRESS = re.compile(r"^(Epoch \d|Predicting|Sanity Checking|Validation)|\d+/\d+ .*it/s")
#: Lightning's start-up lines (INFO records of its loggers).
DEVICE = re.compile(r"^(GPU|TPU) available")

LOGGERS = ("", "pytorch_lightning", "lightning", "lightning.pytorch", "lightning_fabric")


def _lines(text: str) -> list[str]:
    return [line for line in re.split(r"[\r\n]", text) if line.strip()]


def _not_progress(text: str) -> list[str]:
    return [line for line in _lines(text) if not PROGRESS.search(line)]


def _process_state() -> tuple:
    """What a fit must leave as it found it: the warning filters, and the levels of the root
    logger and of Lightning's."""
    return tuple(warnings.filters), {name: logging.getLogger(name).level for name in LOGGERS}


@pytest.fixture(scope="module")
def run():
    result = run_script(SCRIPT)
    default, rest = result.stderr.split(MARKERS[0] + "\n")
    quiet, warned = rest.split(MARKERS[1] + "\n")
    return result, default, quiet, warned


def test_default_settings_show_progress_and_device_lines_as_darts_does(run):
    result, default, _, _ = run
    first = result.stdout + default
    assert any(line.startswith("Epoch 0") for line in _lines(first)), first  # darts' default
    assert any(line.startswith("Predicting") for line in _lines(first)), first
    assert any(DEVICE.search(line) for line in _lines(default)), default
    assert "[torch.onnx]" not in first  # the exporter's step-by-step log
    assert json.loads(_lines(result.stdout)[-1])["restored"] == {"default": True, "quiet": True}


def test_verbose_false_shows_no_progress_or_device_lines(run):
    result, _, quiet, _ = run
    assert not any(DEVICE.search(line) or PROGRESS.search(line) for line in _lines(quiet)), quiet


def test_a_real_warning_still_shows(run):
    _, _, _, warned = run
    assert any("UserWarning: a warning of the user's callback" in line
               for line in _not_progress(warned)), warned


class _Rendezvous(pl.Callback):
    """Orders two concurrent fits: each waits at the start of training until the other has
    started (both are then inside their quiet block), and ``last`` waits at its end until
    ``first`` has returned, so that the first to enter the block is the first to leave."""

    def __init__(self, started: threading.Barrier, wait_for: threading.Event | None) -> None:
        self.started, self.wait_for = started, wait_for

    def __deepcopy__(self, memo) -> "_Rendezvous":
        return self  # darts copies the trainer arguments; the copy meets the same threads

    def on_train_start(self, trainer, pl_module) -> None:
        self.started.wait(timeout=120)

    def on_train_end(self, trainer, pl_module) -> None:
        if self.wait_for is not None:
            assert self.wait_for.wait(timeout=120)


def test_two_fits_in_threads_leave_warnings_and_logger_levels_as_they_were(make_model):
    started, first_done = threading.Barrier(2), threading.Event()
    models = [make_model(TINY_DARTS, model_name=f"thread{i}",
                         pl_trainer_kwargs=quiet_trainer_kwargs(
                             callbacks=[_Rendezvous(started, wait_for)]))
              for i, wait_for in enumerate((None, first_done))]
    series = noisy_sine()
    errors: list[BaseException] = []
    before = _process_state()  # after darts' constructors, which add warning filters

    def fit(model, done: threading.Event | None) -> None:
        try:
            model.fit(series, verbose=False)
        except BaseException as error:  # noqa: B902 (reported by the test's thread)
            errors.append(error)
            started.abort()
        finally:
            if done is not None:
                done.set()

    threads = [threading.Thread(target=fit, args=(models[0], first_done)),
               threading.Thread(target=fit, args=(models[1], None))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == []
    assert all(model.epochs_trained == 1 for model in models)
    assert _process_state() == before


def test_fit_predict_and_export_leave_warnings_and_logger_levels_as_they_were(
        make_model, tmp_path):
    pytest.importorskip("onnxscript")
    model = make_model(TINY_DARTS)
    before = _process_state()
    model.fit(noisy_sine(), verbose=False)
    model.predict(3, verbose=False)
    model.to_onnx(str(tmp_path / "model.onnx"))
    assert _process_state() == before


class _LightningRecords(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.mark.parametrize("verbose", [True, False])
def test_device_lines_are_logged_exactly_when_verbose(make_model, verbose):
    model = make_model(TINY_DARTS)
    records = _LightningRecords()
    logger = logging.getLogger("pytorch_lightning")
    logger.addHandler(records)
    try:
        model.fit(noisy_sine(), verbose=verbose)
    finally:
        logger.removeHandler(records)
    assert any(DEVICE.search(message) for message in records.messages) == verbose


def test_nested_and_overlapping_quiet_blocks_restore_the_level_a_user_set_meanwhile():
    logger = logging.getLogger("pytorch_lightning")
    saved = logger.level
    try:
        logger.setLevel(logging.INFO)
        outer = quiet_lightning()
        outer.__enter__()
        with quiet_lightning(logging.ERROR):
            assert logger.level == logging.ERROR
        assert logger.level == logging.WARNING
        logger.setLevel(logging.DEBUG)  # the user's own setting, while a block is open
        with quiet_lightning():
            assert logger.level == logging.WARNING
        outer.__exit__(None, None, None)
        assert logger.level == logging.DEBUG
    finally:
        logger.setLevel(saved)
