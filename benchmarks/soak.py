"""Soak: many fit / predict / save / load cycles of a small ReinPatchModel in one process, with
the resident memory and the open file descriptors sampled as they go.

A cycle builds a tiny ``ReinPatchModel`` (the failure-path suites' sizes: lookback 12, horizon
3, ``d_model`` 8, one layer), fits it for one epoch on a short series, predicts, saves it into a
fresh temporary folder, loads it back with ``ReinPatchModel.load``, predicts again (the two
forecasts must be identical) and deletes the folder. Every ``--every`` cycles the script runs
the garbage collector (a collectable reference cycle is not a leak) and records

- the resident set size (``VmRSS`` of ``/proc/self/status``; ``psutil`` where ``/proc`` is
  missing), and its peak (``VmHWM``),
- the open file descriptors (the entries of ``/proc/self/fd``),
- the live Python objects the collector tracks (where a leak of Python objects shows first),
- the seconds since the first cycle and the mean seconds per cycle of the interval.

Two variants run one after the other: ``quiet`` (the package's quiet trainer settings, no
validation data, ``save`` / ``load``) and ``checkpoints`` (darts' default Lightning trainer with
TensorBoard event files, validation data, ``save_checkpoints=True``, and
``load_from_checkpoint`` as well): an unclosed logger or checkpoint file would show there.

The verdict compares cycle 20 with the last: the first cycles fill caches that stay (the
imports' lazy modules, torch's allocator pools, Lightning's registries), so growth is measured
from cycle 20. Target: under 50 MB of RSS and no descriptor growth.

Writes ``benchmarks/results/soak.md`` and ``soak.csv`` (with the commit and the date).

python benchmarks/soak.py                 # 200 cycles of each variant (about 4 minutes)
python benchmarks/soak.py --cycles 20 --every 5 --variants quiet --out-dir /tmp/soak  # smoke
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, git_commit, set_threads, utc_now, write_csv, write_markdown  # noqa

# Imported before quiet_lightning runs: importing Lightning sets its loggers' level.
from reinpatch_forecast import ReinPatchModel  # noqa: E402
from reinpatch_forecast._lightning import quiet_lightning, quiet_trainer_kwargs  # noqa: E402

#: The model of every cycle: tests/support.py's TINY_DARTS (a benchmark does not import tests).
TINY = dict(
    input_chunk_length=12, output_chunk_length=3, compression_rate=3, group_size=2,
    d_model=8, n_heads=1, n_layers=1, dropout=0.0, resample_points=4, batch_size=16,
    n_epochs=1, random_state=0,
)
SERIES_LENGTH = 72
HORIZON = 5
#: The measure from which growth counts, and the targets of issue 18.
BASELINE_CYCLE = 20
RSS_TARGET_MB = 50.0
VARIANTS = ("quiet", "checkpoints")
FIELDS = ["variant", "cycle", "rss_mb", "peak_rss_mb", "open_fds", "python_objects", "seconds",
          "cycle_seconds"]


@dataclass
class Sample:
    """One measure, taken after ``cycle`` cycles of ``variant``."""

    variant: str
    cycle: int
    rss_mb: float
    peak_rss_mb: float
    open_fds: int
    python_objects: int
    seconds: float
    cycle_seconds: float


def memory_mb() -> tuple[float, float]:
    """The resident set size and its peak so far, in MB (MiB: 2**20 bytes)."""
    try:
        fields = dict(line.split(":", 1) for line in
                      Path("/proc/self/status").read_text().splitlines() if ":" in line)
        return (int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024)
    except (OSError, KeyError):
        import psutil  # not a dependency: only where /proc is missing

        info = psutil.Process().memory_info()
        peak = getattr(info, "peak_wset", info.rss)
        return info.rss / 2**20, peak / 2**20


def open_fds() -> int:
    """Open file descriptors of this process (the listing's own descriptor not counted)."""
    return len(os.listdir("/proc/self/fd")) - 1


def training_series():
    """The short series every cycle trains on (a noisy sine, float32, hourly)."""
    import pandas as pd
    from darts import TimeSeries

    rng = np.random.default_rng(0)
    t = np.arange(SERIES_LENGTH)
    values = np.sin(2 * np.pi * t / 12) + 0.1 * rng.standard_normal(SERIES_LENGTH)
    index = pd.date_range("2020-01-01", periods=SERIES_LENGTH, freq="h")
    return TimeSeries.from_times_and_values(index, values.astype(np.float32)[:, None])


def one_cycle(series, index: int, variant: str = "quiet") -> None:
    """Fit, predict, save, load, predict again; the folder is gone afterwards.

    ``variant="checkpoints"`` writes every file darts can: darts' default Lightning trainer
    with TensorBoard event files (``log_tensorboard=True``), validation data,
    ``save_checkpoints=True``, and restores the last checkpoint with
    ``ReinPatchModel.load_from_checkpoint`` too: a logger or checkpoint file left open would
    show there.
    """
    folder = tempfile.mkdtemp(prefix=f"soak{index}_")
    checkpoints = variant == "checkpoints"
    trainer = ({"accelerator": "cpu", "enable_progress_bar": False} if checkpoints
               else quiet_trainer_kwargs())
    try:
        model = ReinPatchModel(**TINY, work_dir=folder, model_name=f"soak{index}",
                               save_checkpoints=checkpoints, log_tensorboard=checkpoints,
                               pl_trainer_kwargs=trainer)
        model.fit(series, val_series=series if checkpoints else None, verbose=False)
        expected = model.predict(HORIZON, verbose=False).values()
        path = os.path.join(folder, "model.pt")
        model.save(path)
        # darts pickles the TensorBoard logger into the saved model and checkpoint, and its safe
        # loader refuses that class (darts' own models too): such files load only when trusted.
        loaded = [ReinPatchModel.load(path, trusted=checkpoints)]
        if checkpoints:
            loaded.append(ReinPatchModel.load_from_checkpoint(
                f"soak{index}", work_dir=folder, best=False, trusted=True))
        for other in loaded:
            again = other.predict(HORIZON, series=series, verbose=False).values()
            if not np.array_equal(expected, again):  # the soak also checks what it cycles
                raise AssertionError(f"cycle {index}: a loaded model forecasts differently")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def measure(variant: str, cycle: int, began: float, previous: Sample | None) -> Sample:
    gc.collect()
    rss, peak = memory_mb()
    seconds = time.perf_counter() - began
    done = cycle - (previous.cycle if previous else 0)
    spent = seconds - (previous.seconds if previous else 0.0)
    return Sample(variant=variant, cycle=cycle, rss_mb=rss, peak_rss_mb=peak,
                  open_fds=open_fds(), python_objects=len(gc.get_objects()), seconds=seconds,
                  cycle_seconds=spent / max(done, 1))


def soak(cycles: int, every: int, variant: str = "quiet") -> list[Sample]:
    """Run ``cycles`` cycles; a measure before the first and after every ``every``-th."""
    series = training_series()
    began = time.perf_counter()
    samples = [measure(variant, 0, began, None)]
    for index in range(1, cycles + 1):
        one_cycle(series, index, variant)
        if index % every == 0 or index == cycles:
            samples.append(measure(variant, index, began, samples[-1]))
            s = samples[-1]
            print(f"[soak {variant}] cycle {s.cycle}: RSS {s.rss_mb:.1f} MB, {s.open_fds} fds, "
                  f"{s.python_objects} objects, {s.cycle_seconds:.2f} s/cycle", flush=True)
    return samples


def growth(samples: list[Sample]) -> dict[str, float]:
    """Growth from the baseline cycle (the first measure at or after it) to the last."""
    base = next((s for s in samples if s.cycle >= BASELINE_CYCLE), samples[0])
    last = samples[-1]
    later = [s for s in samples if s.cycle >= base.cycle]
    # The least-squares slope as well: RSS moves up and down by a few MB as the allocator
    # takes and returns arenas, which the two end points alone can catch at either extreme.
    slope = (float(np.polyfit([s.cycle for s in later], [s.rss_mb for s in later], 1)[0])
             if len(later) > 1 else 0.0)
    return {"from_cycle": base.cycle, "to_cycle": last.cycle,
            "rss_slope_mb_per_100": 100 * slope,
            "rss_mb": last.rss_mb - base.rss_mb, "open_fds": last.open_fds - base.open_fds,
            "python_objects": last.python_objects - base.python_objects,
            "rss_mb_per_cycle": (last.rss_mb - base.rss_mb) / max(last.cycle - base.cycle, 1),
            "met": last.rss_mb - base.rss_mb < RSS_TARGET_MB and last.open_fds <= base.open_fds}


VARIANT_TEXT = {
    "quiet": "the package's quiet trainer settings (no logger), no validation data, "
             "`save` and `load`",
    "checkpoints": "darts' default Lightning trainer with TensorBoard event files "
                   "(`log_tensorboard=True`), validation data, `save_checkpoints=True`; `save` / "
                   "`load` and `load_from_checkpoint(best=False)` (both with `trusted=True`: "
                   "darts pickles the logger, which its safe loader refuses)",
}


def write(runs: dict[str, list[Sample]], command: str, threads: int,
          out_dir: Path) -> dict[str, dict]:
    """soak.md and soak.csv; returns the growth of each variant."""
    grown = {variant: growth(samples) for variant, samples in runs.items()}
    commit, date = git_commit(), utc_now()
    write_csv(out_dir / "soak.csv", [asdict(s) for samples in runs.values() for s in samples],
              FIELDS, commit, date)
    lines = [
        "# Soak: fit / predict / save / load cycles in one process",
        "",
        f"Generated by `{command}` on {date} at commit `{commit}`; {threads} torch thread(s), "
        f"on a shared 2-core machine (other runs on the cores: seconds are not speeds).",
        "",
        f"Each cycle builds a tiny `ReinPatchModel` (lookback {TINY['input_chunk_length']}, "
        f"horizon {TINY['output_chunk_length']}, d_model {TINY['d_model']}, one layer), fits "
        f"it for one epoch on a {SERIES_LENGTH}-step series, predicts {HORIZON} steps, saves "
        "it into a fresh temporary folder, loads it, predicts again (identical forecasts are "
        "checked) and deletes the folder. The variants run one after the other in the same "
        "process. Measures are taken after a garbage collection: RSS is `VmRSS` of "
        "`/proc/self/status` (MiB), descriptors the entries of `/proc/self/fd`, objects the "
        f"live objects Python's collector tracks; the RSS trend is the least-squares slope over "
        "the measures from the baseline on. Targets: RSS growth under "
        f"{RSS_TARGET_MB:.0f} MB and no descriptor growth from cycle {BASELINE_CYCLE} to the "
        "last (the first cycles fill caches that stay).",
        "",
        "| variant | what a cycle does | cycles | RSS growth (MB) | per cycle (KB) | "
        "RSS trend (MB / 100 cycles) | fd growth | object growth | target met |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for variant, g in grown.items():
        lines.append(
            f"| {variant} | {VARIANT_TEXT[variant]} | {g['from_cycle']} → {g['to_cycle']} | "
            f"{g['rss_mb']:+.1f} | {1024 * g['rss_mb_per_cycle']:+.1f} | "
            f"{g['rss_slope_mb_per_100']:+.2f} | {g['open_fds']:+d} | "
            f"{g['python_objects']:+d} | {'yes' if g['met'] else 'NO'} |")
    for variant, samples in runs.items():
        lines += [
            "", f"## Every measure: {variant}", "",
            "| cycle | RSS (MB) | peak RSS (MB) | open fds | Python objects | seconds | "
            "s / cycle |",
            "|---|---|---|---|---|---|---|",
        ]
        for s in samples:
            lines.append(f"| {s.cycle} | {s.rss_mb:.1f} | {s.peak_rss_mb:.1f} | {s.open_fds} | "
                         f"{s.python_objects} | {s.seconds:.0f} | {s.cycle_seconds:.2f} |")
    write_markdown(out_dir / "soak.md", lines, echo=True)
    return grown


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--every", type=int, default=10, help="cycles between two measures")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.cycles < 1 or args.every < 1:
        parser.error("--cycles and --every must be >= 1")
    set_threads(args.threads)
    command = "python benchmarks/soak.py " + " ".join(sys.argv[1:] if argv is None else argv)
    runs = {}
    with quiet_lightning(), warnings.catch_warnings():
        # Lightning's notices on tiny epochs (no val_loss to checkpoint without validation
        # data; fewer batches than the logging interval): about the sizes, not the soak
        warnings.filterwarnings("ignore", message=".*could not find the monitored key.*")
        warnings.filterwarnings("ignore", message=".*smaller than the logging interval.*")
        for variant in args.variants:
            runs[variant] = soak(args.cycles, args.every, variant)
    write(runs, command.strip(), args.threads, args.out_dir)


if __name__ == "__main__":
    main()
