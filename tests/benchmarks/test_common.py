"""benchmarks/_common.py: the helpers the timing scripts share (a measurement in a fresh
process, the process's memory)."""

from __future__ import annotations

import pytest

CHILD = """import argparse, json
parser = argparse.ArgumentParser()
parser.add_argument("--one")
parser.add_argument("--repeats", type=int)
args = parser.parse_args()
print("a log line")
print(json.dumps({**json.loads(args.one), "repeats": args.repeats}))
"""


def test_a_child_process_measures_one_spec_and_its_last_line_comes_back(import_benchmark,
                                                                        tmp_path):
    common = import_benchmark("_common")
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    assert common.run_child(str(script), {"L": 96}, repeats=3) == {"L": 96, "repeats": 3}
    with pytest.raises(RuntimeError, match="unrecognized arguments"):
        common.run_child(str(script), {"L": 96}, env={"OMP_NUM_THREADS": "1"}, warmup=1)


def test_the_memory_fields_are_in_mib(import_benchmark):
    memory = import_benchmark("_common").status_mb("VmRSS", "VmHWM")
    assert 0 < memory["VmRSS"] <= memory["VmHWM"] < 1e6
