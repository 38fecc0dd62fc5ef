"""A darts user's fit, predict and ``to_onnx`` print no foreign tip or benign warning, and
change no process-wide logging or warning state; progress bars and real warnings still show.

Run in a fresh process (``scripts/quiet_fit_predict_export.py``), so that the output is the
real one and no earlier test has already shown a once-only warning.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support import run_script

SCRIPT = Path(__file__).parent / "scripts" / "quiet_fit_predict_export.py"
MARKER = "--- a model whose callback warns ---"

#: Lines of Lightning's progress bars (rich or tqdm; a tqdm bar redraws with carriage returns).
PROGRESS = re.compile(r"^(Epoch \d|Predicting|Sanity Checking|Validation)|\d+/\d+ .*it/s")


def _lines(text: str) -> list[str]:
    return [line for line in re.split(r"[\r\n]", text) if line.strip()]


def _not_progress(text: str) -> list[str]:
    return [line for line in _lines(text) if not PROGRESS.search(line)]


@pytest.fixture(scope="module")
def run():
    result = run_script(SCRIPT)
    quiet, warned = result.stderr.split(MARKER + "\n")
    return result, quiet, warned


def test_fit_predict_and_export_write_nothing_but_progress_bars(run):
    result, quiet, _ = run
    # Nothing at all on stderr: Lightning's "GPU available" lines and litlogger tip (INFO
    # records), the pin_memory / LeafSpec / empty-rank notices of darts' data loaders, and the
    # ONNX exporter's torchvision notices are all gone.
    assert _not_progress(quiet) == [], quiet
    first = result.stdout + quiet
    assert any(line.startswith("Epoch 0") for line in _lines(first)), first  # darts' default
    assert any(line.startswith("Predicting") for line in _lines(first)), first
    assert "[torch.onnx]" not in first  # the exporter's step-by-step log
    assert json.loads(_lines(result.stdout)[-1]) == {"restored": True}


def test_a_real_warning_still_shows(run):
    _, _, warned = run
    lines = _not_progress(warned)
    # the warning's own two lines (the message, and the source line that raised it)
    assert len(lines) == 2, warned
    assert "UserWarning: a warning of the user's callback" in lines[0]
