"""Helpers of the timing scripts (``speed.py``, ``scaling.py``): the commit and date stamp,
median timing, and their CSV and markdown files."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

BENCHMARKS = Path(__file__).resolve().parent
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from run import commit as git_commit, utc_now  # noqa: E402,F401
from tables import RESULTS, write_csv as write_table_csv  # noqa: E402,F401


def median_seconds(step: Callable[[], object], repeats: int, warmup: int = 2) -> float:
    """Median wall time of ``step`` over ``repeats`` calls after ``warmup`` untimed ones (the
    median: one call slowed by another process on a shared machine does not move it)."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        step()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def write_csv(path: Path, rows: Iterable[dict], fields: Sequence[str],
              commit: str | None = None, date: str | None = None) -> None:
    """Rows as CSV (:func:`tables.write_csv`) with ``commit`` and ``date`` columns, filled from
    the row or the arguments."""
    stamp = {"commit": commit or git_commit(), "date": date or utc_now()}
    fields = list(fields) + [f for f in ("commit", "date") if f not in fields]
    write_table_csv(path, [{**stamp, **row} for row in rows], fields)


def write_markdown(path: Path, lines: Sequence[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
