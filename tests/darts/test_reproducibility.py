"""Same ``random_state`` => bit-identical forecasts across fresh processes (issue #8, item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import start_script

SCRIPTS = Path(__file__).parent / "scripts"


def _results(process) -> dict:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, f"{out[-4000:]}\n{err[-4000:]}"
    line = next(line for line in out.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


@pytest.mark.slow
def test_same_seed_bit_identical_across_processes():
    # two fresh processes at once (each on one thread)
    processes = [start_script(SCRIPTS / "reproduce_forecasts.py") for _ in range(2)]
    first, second = (_results(process) for process in processes)
    assert first.keys() == second.keys() == {
        "learned", "learned_boundaries", "quantile_samples", "quantile_parameters",
        "sktime_point", "sktime_quantiles",
    }
    for case in first:
        assert first[case] == second[case], f"{case} differs between two fresh processes"
    assert first["quantile_samples"]["shape"] == [3, 1, 16]
