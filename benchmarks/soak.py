"""Soak: many fit / predict / save / load cycles of a small ReinPatch model in one process, with
the resident memory and the open file descriptors sampled as they go.

A ``quiet`` or ``checkpoints`` cycle builds a tiny ``ReinPatchModel`` (the failure-path suites'
sizes: lookback 12, horizon 3, ``d_model`` 8, one layer), fits it for one epoch on a short
series, predicts, saves it into a fresh temporary folder, loads it back with
``ReinPatchModel.load``, predicts again (the two forecasts must be identical) and deletes the
folder. Every ``--every`` cycles the script runs the garbage collector (a collectable reference
cycle is not a leak) and records

- the resident set size (``VmRSS`` of ``/proc/self/status``; ``psutil`` where ``/proc`` is
  missing), and its peak (``VmHWM``),
- the open file descriptors (the entries of ``/proc/self/fd``),
- the live Python objects the collector tracks (where a leak of Python objects shows first),
- the seconds since the first cycle and the mean seconds per cycle of the interval.

Four variants, run one after the other in one process:

``quiet``
    The package's quiet trainer settings, no validation data, ``save`` / ``load``.
``checkpoints``
    darts' default Lightning trainer with TensorBoard event files, validation data,
    ``save_checkpoints=True``, and ``load_from_checkpoint`` as well: an unclosed logger or
    checkpoint file would show there.
``sktime``
    The sktime face: a tiny ``ReinPatchForecaster`` (the same sizes, quantile likelihood)
    ``fit`` on a pandas series, ``update`` with the next steps (continues training),
    ``predict``, ``predict_quantiles``, ``sklearn.base.clone`` and sktime's ``clone()``, and a
    pickle round trip whose forecaster must predict (points and quantiles) identically.
``cli``
    The command line: ``fit``, ``predict`` and ``segment`` of ``python -m
    reinpatch_forecast.cli`` run as subprocesses on one CSV file, in a fresh folder per cycle.
    The parent's RSS and descriptors are sampled as above, but what matters for subprocesses is
    what they leave behind and what each costs, so a cycle also records each subprocess's peak
    RSS (``os.wait4``'s ``ru_maxrss`` of that child) and wall time, the files left in the
    children's ``TMPDIR`` (a folder of the soak's own, never emptied by it) and in the cycle
    folder beyond the expected outputs, processes still alive in the children's sessions
    (each child starts a session: an orphaned grandchild keeps its session id), zombie
    children, and whether the forecast CSV is the first cycle's (every fit is seeded).

The verdict compares the baseline cycle with the last: the first in-process cycles fill caches
that stay (the imports' lazy modules, torch's allocator pools, Lightning's registries), so
growth is measured from cycle 20. The ``cli`` parent fills no such cache (every import is done
before cycle 0 and a cycle only starts processes), so its growth counts from cycle 1. Target:
under 50 MB of RSS and no descriptor growth; for ``cli`` also no file or process left behind.

Writes ``benchmarks/results/soak.md`` and ``soak.csv`` (with the commit and the date of each
variant's rows). The variants not run keep their rows from the existing ``soak.csv`` in
``--out-dir``, so ``--variants cli`` adds the CLI's rows beside the others. Unlike the other
scripts it keeps no run cache (``*_runs.jsonl``): what it measures is one process, so a stopped
soak starts again.

The ``cli`` variant defaults to ``--cli-cycles 20``, not 200: each cycle starts three
interpreters that import torch, darts and Lightning (about 10 s each on the shared 2-core
machine, so 200 cycles would take about two hours); the children die with their cycle, and what
can accumulate, the parent's descriptors and the files and processes left behind, shows from
the first cycle on. ``--cli-cycles 200`` runs the issue's count.

python benchmarks/soak.py                 # 200 cycles of quiet and checkpoints (about 4 minutes)
python benchmarks/soak.py --variants sktime cli --cli-cycles 16   # the other faces (12 minutes)
python benchmarks/soak.py --variants all  # every variant
python benchmarks/soak.py --cycles 20 --every 5 --variants quiet --out-dir /tmp/soak  # smoke
"""

from __future__ import annotations

import argparse
import csv
import gc
import logging
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Iterator

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
#: The sktime forecaster of a ``sktime`` cycle: TINY's sizes, with a quantile likelihood so
#: that ``predict_quantiles`` is available (few samples: the soak is not about their quality).
TINY_SKTIME = dict(
    {k: v for k, v in TINY.items() if k != "output_chunk_length"},
    likelihood="quantile", quantiles=(0.1, 0.5, 0.9), num_samples=20,
)
#: The ``fit`` flags of a ``cli`` cycle: TINY's sizes as the command line spells them.
CLI_FIT_FLAGS = [
    "--lookback", "12", "--horizon", "3", "--compression-rate", "3", "--group-size", "2",
    "--d-model", "8", "--n-heads", "1", "--n-layers", "1", "--dropout", "0",
    "--resample-points", "4", "--batch-size", "16", "--epochs", "1", "--seed", "0",
]
#: What a ``cli`` cycle folder holds when nothing is left behind: the three commands' outputs
#: and the logs of their stdout and stderr.
CLI_OUTPUTS = {"model.pt", "model.pt.ckpt", "forecast.csv", "patches.png"}
CLI_COMMANDS = ("fit", "predict", "segment")
SERIES_LENGTH = 72
HORIZON = 5
#: Steps the sktime forecaster sees at ``update`` (the end of the series) and its horizon.
UPDATE_STEPS = 12
SKTIME_FH = (1, 2, 3)
#: The measure from which growth counts (per variant; others: BASELINE_CYCLE), and the targets
#: of issue 18.
BASELINE_CYCLE = 20
BASELINES = {"cli": 1}
RSS_TARGET_MB = 50.0
VARIANTS = ("quiet", "checkpoints", "sktime", "cli")
DEFAULT_VARIANTS = ("quiet", "checkpoints")
#: darts' notice at every ``update`` of the sktime face (a second fit of the same model).
DARTS_TORCH_LOGGER = "darts.models.forecasting.torch_forecasting_model"


@dataclass
class Sample:
    """One measure, taken after ``cycle`` cycles of ``variant``.

    The fields after ``cycle_seconds`` are the ``cli`` variant's (``None`` elsewhere): each
    subprocess's peak RSS (the largest of the interval) and wall time (the mean of the
    interval), files left behind and processes alive since the first cycle, zombie children
    now, and cycles whose forecast differed from the first cycle's.
    """

    variant: str
    cycle: int
    rss_mb: float
    peak_rss_mb: float
    open_fds: int
    python_objects: int
    seconds: float
    cycle_seconds: float
    fit_peak_rss_mb: float | None = None
    predict_peak_rss_mb: float | None = None
    segment_peak_rss_mb: float | None = None
    fit_s: float | None = None
    predict_s: float | None = None
    segment_s: float | None = None
    leftover_files: int | None = None
    stray_processes: int | None = None
    zombies: int | None = None
    forecasts_differ: int | None = None


FIELDS = [f.name for f in fields(Sample)]
CLI_FIELDS = FIELDS[FIELDS.index("fit_peak_rss_mb"):]


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


def sine_values() -> np.ndarray:
    """The values every cycle trains on: a noisy sine of SERIES_LENGTH steps (float64)."""
    rng = np.random.default_rng(0)
    t = np.arange(SERIES_LENGTH)
    return np.sin(2 * np.pi * t / 12) + 0.1 * rng.standard_normal(SERIES_LENGTH)


def series_index():
    import pandas as pd

    return pd.date_range("2020-01-01", periods=SERIES_LENGTH, freq="h")


def training_series():
    """The short series every darts cycle trains on (a noisy sine, float32, hourly)."""
    from darts import TimeSeries

    return TimeSeries.from_times_and_values(series_index(),
                                            sine_values().astype(np.float32)[:, None])


def sktime_series():
    """The same series as a pandas ``Series`` (the sktime face's input)."""
    import pandas as pd

    return pd.Series(sine_values(), index=series_index(), name="y")


def write_cli_csv(path: Path) -> Path:
    """The same series as the CSV file every ``cli`` cycle reads (``date``, ``y``)."""
    import pandas as pd

    pd.DataFrame({"date": series_index(), "y": sine_values()}).to_csv(path, index=False)
    return path


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
        # safe loading (no trusted=True): the model leaves its TensorBoard logger out of the file
        loaded = [ReinPatchModel.load(path)]
        if checkpoints:
            loaded.append(ReinPatchModel.load_from_checkpoint(
                f"soak{index}", work_dir=folder, best=False))
        for other in loaded:
            again = other.predict(HORIZON, series=series, verbose=False).values()
            if not np.array_equal(expected, again):  # the soak also checks what it cycles
                raise AssertionError(f"cycle {index}: a loaded model forecasts differently")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def sktime_cycle(y, index: int) -> None:
    """One cycle of the sktime face: fit, update, predict, predict_quantiles, clone, pickle.

    Parameters
    ----------
    y : pd.Series
        The whole series; ``fit`` sees all but its last ``UPDATE_STEPS`` steps, ``update``
        those (and continues training on everything seen).
    index : int
        The cycle's number (for the error message).

    Raises
    ------
    AssertionError
        If a clone does not carry the parameters, or the unpickled forecaster forecasts
        (points or quantiles) differently.
    """
    from sklearn.base import clone as sklearn_clone

    from reinpatch_forecast import ReinPatchForecaster

    forecaster = ReinPatchForecaster(**TINY_SKTIME)
    forecaster.fit(y.iloc[:-UPDATE_STEPS], fh=list(SKTIME_FH))
    forecaster.update(y.iloc[-UPDATE_STEPS:])
    points = forecaster.predict()
    quantiles = forecaster.predict_quantiles(alpha=[0.1, 0.9])
    params = forecaster.get_params(deep=False)
    for copy in (sklearn_clone(forecaster), forecaster.clone()):
        if copy.get_params(deep=False) != params or copy.is_fitted:
            raise AssertionError(f"cycle {index}: a clone differs or is fitted")
    restored = pickle.loads(pickle.dumps(forecaster))
    if not (points.equals(restored.predict())
            and quantiles.equals(restored.predict_quantiles(alpha=[0.1, 0.9]))):
        raise AssertionError(f"cycle {index}: the unpickled forecaster forecasts differently")


def process_table() -> list[tuple[int, int, int, str]]:
    """``(pid, parent pid, session id, state)`` of every process ``/proc`` lists."""
    table = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path("/proc", entry, "stat").read_text()
        except OSError:  # gone since the listing
            continue
        # "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses
        state, ppid, _, session = text[text.rindex(")") + 2:].split()[:4]
        table.append((int(entry), int(ppid), int(session), state))
    return table


#: A /usr/bin/time-like launcher: forks, execs ``python -m reinpatch_forecast.cli ...`` in the
#: child, and writes that child's own ``ru_maxrss`` (KB) to the file named by its first
#: argument. The command's peak cannot be read from a child of the soak itself: a process forked
#: from the soak's (large) parent keeps the parent's RSS as its high-water mark through exec,
#: while the launcher's own image is small when it forks.
LAUNCHER = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.execv(sys.executable, [sys.executable, '-m', 'reinpatch_forecast.cli',"
    " *sys.argv[2:]])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def run_child(args: list[str], cwd: Path, env: dict, log: Path) -> tuple[int, float, float]:
    """Run ``python -m reinpatch_forecast.cli *args`` in ``cwd``, in a session of its own,
    through :data:`LAUNCHER`.

    Returns
    -------
    tuple
        The launcher's pid (the session id of the command and of anything it starts), the
        command's peak RSS (MB; its own ``ru_maxrss``) and its wall seconds (start-up
        included).

    Raises
    ------
    RuntimeError
        If the command fails (with the end of its output).
    """
    usage_file = log.with_suffix(".maxrss")
    began = time.perf_counter()
    with log.open("w") as out:
        child = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(usage_file), *args],
                                 cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        child.wait()
    seconds = time.perf_counter() - began
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:1])} exited with {child.returncode}:\n"
                           f"{log.read_text()[-3000:]}")
    peak_kb = int(usage_file.read_text())
    usage_file.unlink()
    return child.pid, peak_kb / 1024, seconds


class CliSoak:
    """The state of a ``cli`` soak: its folder, the children's environment, the sessions
    started, and the leftovers and statistics of every cycle."""

    def __init__(self, root: Path, threads: int) -> None:
        self.root = root
        self.tmp = root / "tmp"  # the children's TMPDIR: never emptied while the soak runs
        self.tmp.mkdir()
        self.csv = write_cli_csv(root / "data.csv")
        self.env = {**os.environ, "TMPDIR": str(self.tmp), "OMP_NUM_THREADS": str(threads),
                    "MKL_NUM_THREADS": str(threads)}
        self.sessions: set[int] = set()
        self.unexpected = 0  # files beyond CLI_OUTPUTS and the logs, over all cycles
        self.first_forecast: str | None = None
        self.forecasts_differ = 0
        self.cycles: list[dict] = []  # per cycle: peak MB and seconds of each command

    def cycle(self, index: int) -> None:
        """``fit``, ``predict`` and ``segment`` in a fresh folder; count what is left there."""
        folder = self.root / f"cycle{index}"
        folder.mkdir()
        csv_path = str(self.csv)
        commands = {
            "fit": ["fit", "--csv", csv_path, "--target", "y", "--out", "model.pt", "--quiet",
                    *CLI_FIT_FLAGS],
            "predict": ["predict", "--model", "model.pt", "--csv", csv_path, "--out",
                        "forecast.csv", "--quiet"],
            "segment": ["segment", "--model", "model.pt", "--csv", csv_path, "--out",
                        "patches.png", "--quiet"],
        }
        stats = {}
        for name in CLI_COMMANDS:
            log = folder / f"{name}.log"
            session, peak, seconds = run_child(commands[name], folder, self.env, log)
            self.sessions.add(session)
            stats[f"{name}_peak_rss_mb"], stats[f"{name}_s"] = peak, seconds
        self.cycles.append(stats)
        forecast = (folder / "forecast.csv").read_text()
        self.first_forecast = self.first_forecast or forecast
        self.forecasts_differ += forecast != self.first_forecast
        logs = {f"{name}.log" for name in CLI_COMMANDS}
        self.unexpected += sum(1 for path in folder.rglob("*")
                               if path.relative_to(folder).as_posix() not in CLI_OUTPUTS | logs)
        shutil.rmtree(folder)

    def leftovers(self) -> dict[str, int]:
        """Files left behind so far, processes alive in the children's sessions, zombies."""
        table = process_table()
        return {
            "leftover_files": self.unexpected + sum(1 for _ in self.tmp.rglob("*")),
            "stray_processes": sum(1 for _, _, session, state in table
                                   if session in self.sessions and state != "Z"),
            "zombies": sum(1 for _, ppid, _, state in table
                           if ppid == os.getpid() and state == "Z"),
            "forecasts_differ": self.forecasts_differ,
        }


def measure(variant: str, cycle: int, began: float, previous: Sample | None,
            cli: CliSoak | None = None) -> Sample:
    gc.collect()
    rss, peak = memory_mb()
    seconds = time.perf_counter() - began
    done = cycle - (previous.cycle if previous else 0)
    spent = seconds - (previous.seconds if previous else 0.0)
    extra: dict = {}
    if cli is not None:
        extra = cli.leftovers()
        interval = cli.cycles[len(cli.cycles) - done:] if done and cli.cycles else []
        for name in CLI_COMMANDS if interval else ():
            extra[f"{name}_peak_rss_mb"] = max(c[f"{name}_peak_rss_mb"] for c in interval)
            extra[f"{name}_s"] = float(np.mean([c[f"{name}_s"] for c in interval]))
    return Sample(variant=variant, cycle=cycle, rss_mb=rss, peak_rss_mb=peak,
                  open_fds=open_fds(), python_objects=len(gc.get_objects()), seconds=seconds,
                  cycle_seconds=spent / max(done, 1), **extra)


def soak(cycles: int, every: int, variant: str = "quiet", threads: int = 1) -> list[Sample]:
    """Run ``cycles`` cycles; a measure before the first and after every ``every``-th."""
    root = Path(tempfile.mkdtemp(prefix=f"soak_{variant}_"))
    try:
        cli = CliSoak(root, threads) if variant == "cli" else None
        if variant == "cli":
            run = cli.cycle
        elif variant == "sktime":
            y = sktime_series()
            run = lambda index: sktime_cycle(y, index)  # noqa: E731
        else:
            series = training_series()
            run = lambda index: one_cycle(series, index, variant)  # noqa: E731
        began = time.perf_counter()
        samples = [measure(variant, 0, began, None, cli)]
        for index in range(1, cycles + 1):
            run(index)
            if index % every == 0 or index == cycles:
                samples.append(measure(variant, index, began, samples[-1], cli))
                s = samples[-1]
                line = (f"[soak {variant}] cycle {s.cycle}: RSS {s.rss_mb:.1f} MB, "
                        f"{s.open_fds} fds, {s.python_objects} objects, "
                        f"{s.cycle_seconds:.2f} s/cycle")
                if cli is not None:
                    line += (f"; children peak {s.fit_peak_rss_mb:.0f}/"
                             f"{s.predict_peak_rss_mb:.0f}/{s.segment_peak_rss_mb:.0f} MB, "
                             f"{s.leftover_files} files left, {s.stray_processes} strays, "
                             f"{s.zombies} zombies")
                print(line, flush=True)
        return samples
    finally:
        shutil.rmtree(root, ignore_errors=True)


def baseline_cycle(variant: str) -> int:
    return BASELINES.get(variant, BASELINE_CYCLE)


def growth(samples: list[Sample]) -> dict[str, float]:
    """Growth from the baseline cycle (the first measure at or after it) to the last.

    The baseline is cycle 20 (``BASELINE_CYCLE``), or the variant's own (``BASELINES``). For
    the ``cli`` variant the target also asks that no file or process is left behind and that
    no zombie child waits.
    """
    start = baseline_cycle(samples[0].variant)
    base = next((s for s in samples if s.cycle >= start), samples[0])
    last = samples[-1]
    later = [s for s in samples if s.cycle >= base.cycle]
    # The least-squares slope as well: RSS moves up and down by a few MB as the allocator
    # takes and returns arenas, which the two end points alone can catch at either extreme.
    slope = (float(np.polyfit([s.cycle for s in later], [s.rss_mb for s in later], 1)[0])
             if len(later) > 1 else 0.0)
    met = last.rss_mb - base.rss_mb < RSS_TARGET_MB and last.open_fds <= base.open_fds
    if last.leftover_files is not None:
        met = met and not (last.leftover_files or last.stray_processes or last.zombies)
    return {"from_cycle": base.cycle, "to_cycle": last.cycle,
            "rss_slope_mb_per_100": 100 * slope,
            "rss_mb": last.rss_mb - base.rss_mb, "open_fds": last.open_fds - base.open_fds,
            "python_objects": last.python_objects - base.python_objects,
            "rss_mb_per_cycle": (last.rss_mb - base.rss_mb) / max(last.cycle - base.cycle, 1),
            "met": met}


VARIANT_TEXT = {
    "quiet": "the package's quiet trainer settings (no logger), no validation data, "
             "`save` and `load`",
    "checkpoints": "darts' default Lightning trainer with TensorBoard event files "
                   "(`log_tensorboard=True`), validation data, `save_checkpoints=True`; `save` / "
                   "`load` and `load_from_checkpoint(best=False)` (safe loading: the logger is "
                   "not in the files)",
    "sktime": "`ReinPatchForecaster` (same sizes, quantile likelihood, 20 samples) `fit` on "
              f"{SERIES_LENGTH - UPDATE_STEPS} steps, `update` with {UPDATE_STEPS} more "
              "(training continues), `predict`, `predict_quantiles`, `sklearn.base.clone` and "
              "`clone()`, pickle round trip (identical points and quantiles checked)",
    "cli": "`fit`, `predict`, `segment` of `python -m reinpatch_forecast.cli` as three "
           "subprocesses on one CSV file, in a fresh folder (parent process measured; the "
           "children's costs and leftovers below)",
}


def _parse(value: str, kind) -> object:
    """A CSV cell back as the Sample field's type (empty: ``None``)."""
    if value in ("", None):
        return None
    text = str(kind)
    if "int" in text and "float" not in text:
        return int(value)
    if "float" in text:
        return float(value)
    return value


def previous_runs(path: Path, skip: set[str]) -> tuple[dict[str, list[Sample]], dict]:
    """The samples of every variant not in ``skip`` from an existing ``soak.csv``, and each
    variant's ``(commit, date)``; nothing when the file is missing."""
    runs: dict[str, list[Sample]] = {}
    stamps: dict[str, tuple[str, str]] = {}
    if not path.exists():
        return runs, stamps
    kinds = {f.name: f.type for f in fields(Sample)}
    with path.open() as handle:
        for row in csv.DictReader(handle):
            if row["variant"] in skip or row["variant"] not in VARIANTS:
                continue
            values = {name: _parse(row.get(name, ""), kind) for name, kind in kinds.items()}
            runs.setdefault(row["variant"], []).append(Sample(**values))
            stamps[row["variant"]] = (row.get("commit", "unknown"), row.get("date", "unknown"))
    return runs, stamps


def _number(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def write(runs: dict[str, list[Sample]], command: str, threads: int,
          out_dir: Path) -> dict[str, dict]:
    """soak.md and soak.csv; returns the growth of each variant.

    The variants of ``runs`` get this commit and date; the other variants of an existing
    ``soak.csv`` in ``out_dir`` keep their rows, commit and date, and come first.
    """
    commit, date = git_commit(), utc_now()
    kept, stamps = previous_runs(out_dir / "soak.csv", set(runs))
    stamps.update({variant: (commit, date) for variant in runs})
    runs = {variant: samples for variant, samples in {**kept, **runs}.items()}
    runs = {v: runs[v] for v in VARIANTS if v in runs}
    grown = {variant: growth(samples) for variant, samples in runs.items()}
    rows = [{**asdict(s), "commit": stamps[v][0], "date": stamps[v][1]}
            for v, samples in runs.items() for s in samples]
    write_csv(out_dir / "soak.csv", rows, FIELDS, commit, date)
    lines = [
        "# Soak: fit / predict / save / load cycles in one process",
        "",
        f"Last written by `{command}` on {date} at commit `{commit}`; {threads} torch "
        "thread(s), on a shared 2-core machine (other runs on the cores: seconds are not "
        "speeds). Each variant's own commit and date are in the table; variants not run by "
        "that command kept their rows from the previous `soak.csv`.",
        "",
        f"A `quiet` or `checkpoints` cycle builds a tiny `ReinPatchModel` (lookback "
        f"{TINY['input_chunk_length']}, horizon {TINY['output_chunk_length']}, d_model "
        f"{TINY['d_model']}, one layer), fits it for one epoch on a {SERIES_LENGTH}-step "
        f"series, predicts {HORIZON} steps, saves it into a fresh temporary folder, loads it, "
        "predicts again (identical forecasts are checked) and deletes the folder. Each "
        "variant runs in one process. Measures are taken after a garbage collection: RSS is "
        "`VmRSS` of `/proc/self/status` (MiB), descriptors the entries of `/proc/self/fd`, "
        "objects the live objects Python's collector tracks; the RSS trend is the "
        "least-squares slope over the measures from the baseline on. Targets: RSS growth under "
        f"{RSS_TARGET_MB:.0f} MB and no descriptor growth from cycle {BASELINE_CYCLE} to the "
        "last (the first cycles fill caches that stay); for `cli`, from cycle "
        f"{BASELINES['cli']} (its parent imports everything before cycle 0 and only starts "
        "processes), and also no file or process left behind.",
        "",
        "| variant | what a cycle does | cycles | RSS growth (MB) | per cycle (KB) | "
        "RSS trend (MB / 100 cycles) | fd growth | object growth | commit, date | target met |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for variant, g in grown.items():
        lines.append(
            f"| {variant} | {VARIANT_TEXT[variant]} | {g['from_cycle']} → {g['to_cycle']} | "
            f"{g['rss_mb']:+.1f} | {1024 * g['rss_mb_per_cycle']:+.1f} | "
            f"{g['rss_slope_mb_per_100']:+.2f} | {g['open_fds']:+d} | "
            f"{g['python_objects']:+d} | `{stamps[variant][0]}`, {stamps[variant][1]} | "
            f"{'yes' if g['met'] else 'NO'} |")
    if "cli" in runs:
        lines += cli_section(runs["cli"])
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


def cli_section(samples: list[Sample]) -> list[str]:
    """The ``cli`` variant's subprocess table: what each command costs and leaves behind."""
    measured = [s for s in samples if s.fit_s is not None]
    lines = [
        "", "## The command line's subprocesses", "",
        "For subprocesses the parent's memory is not what matters: each command is a fresh "
        "interpreter (it imports torch, darts and Lightning) that exits with its cycle. So each "
        "measure also gives every command's own peak RSS (`ru_maxrss` of that child from "
        "`os.wait4`; the largest of the interval) and its wall time (the mean of the interval, "
        "import time included), the files left behind since the first cycle (in the children's "
        "`TMPDIR`, a folder of the soak's own, and in the cycle folder beyond `model.pt`, "
        "`model.pt.ckpt`, `forecast.csv`, `patches.png` and the logs), processes still alive "
        "in the children's sessions (each child starts one, so an orphaned grandchild keeps "
        "it), zombie children of the parent, and the cycles whose forecast CSV differed from "
        "the first cycle's (every fit is seeded).",
        "",
    ]
    if measured:
        peaks = {name: [getattr(s, f"{name}_peak_rss_mb") for s in measured]
                 for name in CLI_COMMANDS}
        times = {name: [getattr(s, f"{name}_s") for s in measured] for name in CLI_COMMANDS}
        lines += [
            "| command | peak RSS (MB): first → last (range) | wall s: median (range) |",
            "|---|---|---|",
        ]
        for name in CLI_COMMANDS:
            lines.append(
                f"| {name} | {peaks[name][0]:.0f} → {peaks[name][-1]:.0f} "
                f"({min(peaks[name]):.0f}–{max(peaks[name]):.0f}) | "
                f"{np.median(times[name]):.1f} ({min(times[name]):.1f}–"
                f"{max(times[name]):.1f}) |")
        lines.append("")
    lines += [
        "| cycle | parent RSS (MB) | parent fds | fit peak (MB) | predict peak (MB) | "
        "segment peak (MB) | fit s | predict s | segment s | files left | stray processes | "
        "zombies | forecasts differing |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in samples:
        lines.append(
            f"| {s.cycle} | {s.rss_mb:.1f} | {s.open_fds} | "
            f"{_number(s.fit_peak_rss_mb, '.0f')} | {_number(s.predict_peak_rss_mb, '.0f')} | "
            f"{_number(s.segment_peak_rss_mb, '.0f')} | {_number(s.fit_s, '.1f')} | "
            f"{_number(s.predict_s, '.1f')} | {_number(s.segment_s, '.1f')} | "
            f"{s.leftover_files} | {s.stray_processes} | {s.zombies} | {s.forecasts_differ} |")
    return lines


@contextmanager
def errors_only(name: str) -> Iterator[None]:
    """The logger ``name`` at level ERROR inside the block (restored after)."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--every", type=int, default=10, help="cycles between two measures")
    parser.add_argument("--cli-cycles", type=int, default=20,
                        help="cycles of the cli variant (default 20: each starts three "
                             "interpreters; see the module docstring)")
    parser.add_argument("--cli-every", type=int, default=1,
                        help="cycles between two measures of the cli variant")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS + ("all",),
                        default=list(DEFAULT_VARIANTS),
                        help="variants to run (default: quiet checkpoints; 'all': every one)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if min(args.cycles, args.every, args.cli_cycles, args.cli_every) < 1:
        parser.error("--cycles, --every, --cli-cycles and --cli-every must be >= 1")
    variants = list(VARIANTS) if "all" in args.variants else list(dict.fromkeys(args.variants))
    set_threads(args.threads)
    command = "python benchmarks/soak.py " + " ".join(sys.argv[1:] if argv is None else argv)
    runs = {}
    with quiet_lightning(), errors_only(DARTS_TORCH_LOGGER), warnings.catch_warnings():
        # Lightning's notices on tiny epochs (no val_loss to checkpoint without validation
        # data; fewer batches than the logging interval): about the sizes, not the soak.
        # darts' logger: its warning that `update` trains a fitted model again, every cycle.
        warnings.filterwarnings("ignore", message=".*could not find the monitored key.*")
        warnings.filterwarnings("ignore", message=".*smaller than the logging interval.*")
        for variant in variants:
            if variant == "cli":
                runs[variant] = soak(args.cli_cycles, args.cli_every, variant, args.threads)
            else:
                runs[variant] = soak(args.cycles, args.every, variant, args.threads)
    write(runs, command.strip(), args.threads, args.out_dir)


if __name__ == "__main__":
    main()
