"""Helpers the benchmark scripts share: the commit and date stamp, the process's memory, a
measurement in a fresh process, timing, and CSV and markdown files."""

from __future__ import annotations

import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

from tables import RESULTS, write_csv as write_table_csv  # noqa: F401

REPO = Path(__file__).resolve().parents[1]


def git_commit() -> str:
    """Short hash of ``HEAD``, naming uncommitted changes to the package or the benchmarks."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "reinpatch_forecast",
                                "benchmarks/*.py"], cwd=REPO, text=True, capture_output=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" + uncommitted changes" if dirty else "")


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def status_mb(*fields: str) -> dict[str, float]:
    """Fields of ``/proc/self/status`` given in kB (``VmRSS``, ``VmHWM``, ...), in MiB."""
    lines = Path("/proc/self/status").read_text().splitlines()
    found = dict(line.split(":", 1) for line in lines if ":" in line)
    return {field: int(found[field].split()[0]) / 1024 for field in fields}


def run_child(script: str, spec: dict, env: dict[str, str] | None = None, **flags) -> dict:
    """``script --one SPEC --flag value ...`` in a fresh Python process (``env`` added to this
    one's); the JSON of the last line it prints."""
    argv = [sys.executable, script, "--one", json.dumps(spec)]
    for flag, value in flags.items():
        argv += [f"--{flag}", str(value)]
    result = subprocess.run(argv, capture_output=True, text=True,
                            env={**os.environ, **env} if env else None)
    if result.returncode != 0:
        raise RuntimeError(f"{spec} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def seconds(call: Callable[[], object]) -> float:
    """Wall time of one ``call()``."""
    began = time.perf_counter()
    call()
    return time.perf_counter() - began


def median_seconds(step: Callable[[], object], repeats: int, warmup: int = 2) -> float:
    """Median wall time of ``step`` over ``repeats`` calls after ``warmup`` untimed ones (the
    median: one call slowed by another process on a shared machine does not move it)."""
    for _ in range(warmup):
        step()
    return statistics.median([seconds(step) for _ in range(repeats)])


def write_csv(path: Path, rows: Iterable[dict], fields: Sequence[str],
              commit: str | None = None, date: str | None = None) -> None:
    """Rows as CSV (:func:`tables.write_csv`) with ``commit`` and ``date`` columns, filled from
    the row or the arguments."""
    stamp = {"commit": commit or git_commit(), "date": date or utc_now()}
    fields = list(fields) + [f for f in ("commit", "date") if f not in fields]
    write_table_csv(path, [{**stamp, **row} for row in rows], fields)


def write_markdown(path: Path, lines: Sequence[str]) -> None:
    """The lines as one markdown file, also printed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    print(path.read_text())
