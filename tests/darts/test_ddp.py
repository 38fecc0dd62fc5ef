"""Distributed data-parallel training on CPU (issue #8, item 5).

Two CPU processes with the gloo backend train one model; its forecasts are then made on one
device in every process (a distributed trainer would give each process only part of them).
Runs in a subprocess: DDP needs a script with an ``if __name__ == "__main__"`` guard.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support import run_script

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["ddp", "ddp_spawn"])
def test_ddp_on_two_cpu_processes_trains_and_predicts(strategy, tmp_path):
    run_script(SCRIPTS / "ddp_fit_predict.py", strategy, str(tmp_path), timeout=240)
    lines = [json.loads(path.read_text()) for path in sorted(tmp_path.glob("result_rank*.json"))]
    # ddp re-runs the script in the second process: both write; ddp_spawn: only the main one
    assert sorted(r["rank"] for r in lines) == ([0, 1] if strategy == "ddp" else [0])
    for r in lines:
        assert r["world_size"] == 2
        assert r["n_forecasts"] == 4
        forecasts = np.array(r["forecasts"])
        assert forecasts.shape == (4, 3) and np.isfinite(forecasts).all()
        np.testing.assert_array_equal(np.array(r["from_checkpoint"]), forecasts)
    np.testing.assert_array_equal(lines[0]["forecasts"], lines[-1]["forecasts"])
