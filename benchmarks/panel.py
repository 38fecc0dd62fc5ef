"""A panel of many short series: one global ReinPatchModel fitted on a sample, then forecasts
for the whole panel in one darts ``predict`` call, against darts' own DLinearModel.

The panel holds ``--series`` univariate hourly series (5,000 by default) of 48 to 120 steps,
each a noisy sine of its own period, level, scale and trend (float32: no cast on the way in).
Both models train globally on a sample of ``--fit-series`` of them (200), then forecast ``H``
steps of the first 500, 1,000, 2,500 and all series, each in one ``predict(n, series=[...])``
call.

What is measured, per model and number of series:

- the time of the ``predict`` call (the fastest of ``--repeats`` after a warm-up, the models
  taking turns), and a line through those times: the per-series cost and how far from linear;
- the network's share of it, timed inside the call; the rest is what darts and the model's
  wrapper spend per series (checks, datasets, batching, the output ``TimeSeries``). DLinear's
  network is a few linear maps, so its rest is darts' own per-series cost, which ReinPatch's
  rest should match ("no per-series Python overhead beyond darts' own");
- ReinPatch's wrapper alone: its ``predict`` against darts' ``predict`` on the same model;
- the peak resident memory of one call (``VmHWM`` of ``/proc/self/status``, reset before it
  through ``/proc/self/clear_refs``) and of the whole process (``ru_maxrss``).

Writes ``benchmarks/results/panel.md`` and ``panel.csv`` (with the commit and the date).

python benchmarks/panel.py                         # about 2 minutes on a busy core
python benchmarks/panel.py --series 60 --fit-series 20 --sizes 20 60 --repeats 1 --out-dir /tmp/p
"""

from __future__ import annotations

import argparse
import functools
import gc
import resource
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (RESULTS, git_commit, set_threads, utc_now, write_csv,  # noqa: E402
                     write_markdown)

# Imported before quiet_lightning runs: importing Lightning sets its loggers' level.
from darts import TimeSeries  # noqa: E402
from darts.models import DLinearModel  # noqa: E402

from reinpatch_forecast import ReinPatchModel  # noqa: E402
from reinpatch_forecast._lightning import quiet_lightning, quiet_trainer_kwargs  # noqa: E402

LOOKBACK, HORIZON = 24, 6
MIN_LENGTH, MAX_LENGTH = 48, 120
PREDICT_BATCH = 512
#: Panel prefixes forecast by default (the whole panel is always one of them).
DEFAULT_SIZES = (500, 1000, 2500)
FIELDS = ["model", "series", "predict_seconds", "ms_per_series", "network_seconds",
          "rest_ms_per_series", "wrapper_ms_per_series", "rss_before_mb", "predict_peak_rss_mb",
          "fit_seconds", "fit_series"]


@dataclass
class Row:
    """One model's forecast of the first ``series`` series of the panel."""

    model: str
    series: int
    predict_seconds: float
    ms_per_series: float
    network_seconds: float
    rest_ms_per_series: float
    wrapper_ms_per_series: float | None
    rss_before_mb: float
    predict_peak_rss_mb: float | None
    fit_seconds: float
    fit_series: int


def make_panel(count: int, seed: int = 0) -> list[TimeSeries]:
    """``count`` short univariate hourly series of varied length, level, scale and period."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(MIN_LENGTH, MAX_LENGTH + 1, count)
    periods = rng.choice([6, 12, 24], count)
    levels, scales = rng.normal(0, 10, count), rng.lognormal(0, 1, count)
    trends = rng.normal(0, 0.01, count)
    starts = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 1000, count), "h")
    panel = []
    for i in range(count):
        t = np.arange(lengths[i])
        values = levels[i] + scales[i] * (np.sin(2 * np.pi * t / periods[i]) + trends[i] * t
                                          + 0.2 * rng.standard_normal(lengths[i]))
        index = pd.date_range(starts[i], periods=lengths[i], freq="h")
        panel.append(TimeSeries.from_times_and_values(index, values.astype(np.float32)[:, None]))
    return panel


def build(name: str, work_dir: str, epochs: int):
    """The model ``name`` (``ReinPatch`` or ``DLinear``), small and seeded, quiet on the CPU."""
    common = dict(input_chunk_length=LOOKBACK, output_chunk_length=HORIZON, n_epochs=epochs,
                  batch_size=64, random_state=0, work_dir=work_dir, model_name=f"panel_{name}",
                  pl_trainer_kwargs=quiet_trainer_kwargs())
    if name == "ReinPatch":
        return ReinPatchModel(compression_rate=4, d_model=16, n_heads=2, n_layers=1,
                              group_size=4, **common)
    # darts' DLinear with RevIN, as ReinPatch normalises every series itself
    return DLinearModel(use_reversible_instance_norm=True, **common)


def status_mb(field: str) -> float:
    """A memory field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def process_peak_mb() -> float:
    """The peak resident set size of the whole run (``ru_maxrss``, which resetting ``VmHWM``
    does not touch), in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak_rss() -> bool:
    """Reset ``VmHWM`` to the current RSS (Linux 4.0+); ``False`` where the kernel refuses."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


class NetworkClock:
    """Adds up the time a fitted model's network spends inside ``predict`` calls.

    It wraps the module's ``_produce_predict_output``, the one call through which darts'
    prediction step runs the network (forward pass and, with a likelihood, sampling), so the
    remainder of a ``predict`` is everything around the network.
    """

    def __init__(self, model) -> None:
        self.module = model.model
        self.seconds = 0.0
        original = self.module._produce_predict_output

        def timed(x):
            began = time.perf_counter()
            try:
                return original(x)
            finally:
                self.seconds += time.perf_counter() - began

        self.module._produce_predict_output = timed  # an instance attribute shadows the method

    def time(self, call) -> tuple[float, float]:
        """Wall seconds of ``call()`` and the network's seconds within it."""
        self.seconds = 0.0
        began = time.perf_counter()
        call()
        return time.perf_counter() - began, self.seconds

    def close(self) -> None:
        del self.module._produce_predict_output


def fit(name: str, panel: list[TimeSeries], fit_count: int, epochs: int, work_dir: str):
    """The model ``name`` fitted on a seeded sample of ``fit_count`` series, and the seconds."""
    chosen = np.random.default_rng(1).choice(len(panel), fit_count, replace=False)
    model = build(name, work_dir, epochs)
    began = time.perf_counter()
    model.fit([panel[i] for i in chosen], verbose=False)
    return model, time.perf_counter() - began


def measure(models: dict[str, tuple[Any, float]], panel: list[TimeSeries], size: int,
            repeats: int, fit_count: int) -> list[Row]:
    """Forecasts of the first ``size`` series by every fitted model.

    Each model's first call (a warm-up) gives the peak memory of one call; then the models
    take turns, ``repeats`` rounds, so that a slow spell of the shared machine hits them alike.
    ReinPatch is also timed through darts' own ``predict`` on the same model (its wrapper's
    checks skipped): the difference is what the wrapper adds.
    """
    part = panel[:size]
    clocks = {name: NetworkClock(model) for name, (model, _) in models.items()}
    calls = {name: functools.partial(model.predict, HORIZON, series=part,
                                     batch_size=PREDICT_BATCH, verbose=False)
             for name, (model, _) in models.items()}
    if "ReinPatch" in models:
        calls["darts' predict of ReinPatch"] = functools.partial(
            super(ReinPatchModel, models["ReinPatch"][0]).predict, HORIZON, series=part,
            batch_size=PREDICT_BATCH, verbose=False)
        clocks["darts' predict of ReinPatch"] = clocks["ReinPatch"]
    memory = {}
    for name in models:
        gc.collect()
        before = status_mb("VmRSS")
        can_reset = reset_peak_rss()
        calls[name]()
        memory[name] = (before, status_mb("VmHWM") if can_reset else None)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in calls}
    try:
        for _ in range(repeats):
            for name, call in calls.items():
                gc.collect()  # each call starts from the same collector state: the 5,000
                # forecasts' objects would otherwise trigger a full collection in a random call
                times[name].append(clocks[name].time(call))
    finally:
        for clock in set(clocks.values()):
            clock.close()
    rows = []
    # The fastest call, not the median: with other runs on the cores for minutes at a time,
    # medians of the same call moved by half between two runs; the fastest call is the one
    # they slowed least.
    for name, (_, fit_seconds) in models.items():
        seconds = min(t for t, _ in times[name])
        network = min(n for _, n in times[name])
        rest = min(t - n for t, n in times[name])
        wrapper = None
        if name == "ReinPatch":
            darts_own = min(t for t, _ in times["darts' predict of ReinPatch"])
            wrapper = 1000 * (seconds - darts_own) / size
        rows.append(Row(model=name, series=size, predict_seconds=seconds,
                        ms_per_series=1000 * seconds / size, network_seconds=network,
                        rest_ms_per_series=1000 * rest / size, wrapper_ms_per_series=wrapper,
                        rss_before_mb=memory[name][0], predict_peak_rss_mb=memory[name][1],
                        fit_seconds=fit_seconds, fit_series=fit_count))
        print(f"[panel] {name}: {size} series in {seconds:.2f} s ({rows[-1].ms_per_series:.3f} "
              f"ms/series; network {network:.2f} s)", flush=True)
    return rows


def linear_fit(rows: list[Row], field: str = "predict_seconds") -> dict[str, float]:
    """Least-squares line ``seconds = fixed + per_series * n`` through one model's rows.

    Returns the per-series slope (ms), the fixed cost of a call (s) and the largest relative
    distance of a measured time from the line (how far from linear the scaling is).
    """
    n = np.array([r.series for r in rows], dtype=float)
    seconds = np.array([getattr(r, field) for r in rows], dtype=float)
    if len(rows) < 2:
        return {"per_series_ms": 1000 * seconds[0] / n[0], "fixed_s": 0.0, "worst_gap": 0.0}
    slope, fixed = np.polyfit(n, seconds, 1)
    gap = np.abs(seconds - (fixed + slope * n)) / seconds
    return {"per_series_ms": 1000 * float(slope), "fixed_s": float(fixed),
            "worst_gap": float(gap.max())}


def write(rows: list[Row], command: str, threads: int, repeats: int, panel_size: int,
          process_peak: float, out_dir: Path) -> dict[str, dict[str, float]]:
    """panel.md and panel.csv; returns each model's :func:`linear_fit` of predict and rest."""
    commit, date = git_commit(), utc_now()
    order = list(dict.fromkeys(r.model for r in rows))
    rows = sorted(rows, key=lambda r: (order.index(r.model), r.series))
    write_csv(out_dir / "panel.csv", [asdict(r) for r in rows], FIELDS, commit, date)
    by_model: dict[str, list[Row]] = {}
    for row in rows:
        by_model.setdefault(row.model, []).append(row)
    fits = {}
    for name, model_rows in by_model.items():
        rest = [Row(**{**asdict(r), "predict_seconds": r.rest_ms_per_series * r.series / 1000})
                for r in model_rows]
        fits[name] = {"predict": linear_fit(model_rows), "rest": linear_fit(rest)}
    lines = [
        "# A panel of short series: one global model, one predict call",
        "",
        f"Generated by `{command}` on {date} at commit `{commit}`; torch {torch.__version__}, "
        f"{threads} torch thread(s), on a shared 2-core machine (other runs on the cores: "
        "times are upper bounds, ratios are what to read).",
        "",
        f"{panel_size:,} univariate hourly series of {MIN_LENGTH} to {MAX_LENGTH} steps (noisy "
        "sines of varied period, level, scale and trend; float32). Each model is fitted "
        f"globally on a sample of {rows[0].fit_series} of them (lookback {LOOKBACK}, horizon "
        f"{HORIZON}), then forecasts {HORIZON} steps of the first *n* series of the panel in "
        f"one `model.predict(n={HORIZON}, series=[...], batch_size={PREDICT_BATCH})` call "
        f"(the fastest of {repeats} calls after a warm-up, the models taking turns: the call "
        "other runs slowed least). *network*: "
        "the time the network itself takes inside those calls (the module's "
        "`_produce_predict_output`, timed as it runs); *rest*: predict minus network, what "
        "darts and the model's wrapper spend on the series (checks, datasets, batching, "
        "collation, the output `TimeSeries`); *wrapper*: ReinPatch's predict minus darts' "
        "own `predict` called on the same model (the input checks and float32 cast that "
        "`ReinPatchModel.predict` adds; a difference of two timings, so noisy). ReinPatch: "
        "d_model 16, one layer, compression rate 4 (6 tokens), the learned patcher. DLinear: "
        "darts' `DLinearModel` with RevIN. Memory: RSS (`/proc/self/status`, MiB) just before "
        "the model's first call, and the peak of that call (`VmHWM`, reset before it through "
        "`/proc/self/clear_refs`).",
        "",
        "| model | series | predict (s) | ms / series | network (s) | rest (ms / series) | "
        "wrapper (ms / series) | RSS before (MB) | peak RSS of the predict (MB) | fit (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        peak = "–" if row.predict_peak_rss_mb is None else f"{row.predict_peak_rss_mb:.0f}"
        wrapper = ("–" if row.wrapper_ms_per_series is None
                   else f"{row.wrapper_ms_per_series:+.3f}")
        lines.append(f"| {row.model} | {row.series:,} | {row.predict_seconds:.2f} | "
                     f"{row.ms_per_series:.3f} | {row.network_seconds:.3f} | "
                     f"{row.rest_ms_per_series:.3f} | {wrapper} | {row.rss_before_mb:.0f} | "
                     f"{peak} | {row.fit_seconds:.1f} |")
    lines += ["", "## Scaling: a line through the predict times", "",
              "`predict seconds = fixed + per series x n`, fitted by least squares over the "
              "sizes above; *worst gap*: the largest distance of a measured time from the line, "
              "relative to it (small: the time is linear in the number of series).", "",
              "| model | per series (ms) | fixed per call (s) | worst gap | rest per series "
              "(ms) | time ratio, smallest → whole panel | series ratio |",
              "|---|---|---|---|---|---|---|"]
    for name, model_rows in by_model.items():
        fit, rest = fits[name]["predict"], fits[name]["rest"]
        small, large = model_rows[0], model_rows[-1]
        lines.append(f"| {name} | {fit['per_series_ms']:.3f} | {fit['fixed_s']:.2f} | "
                     f"{100 * fit['worst_gap']:.0f}% | {rest['per_series_ms']:.3f} | "
                     f"{large.predict_seconds / small.predict_seconds:.1f} | "
                     f"{large.series / small.series:.1f} |")
    if {"ReinPatch", "DLinear"} <= fits.keys():
        ours, theirs = fits["ReinPatch"]["rest"], fits["DLinear"]["rest"]
        whole = by_model["ReinPatch"][-1]
        lines += ["", f"Per series, beyond its network, ReinPatch's predict costs "
                  f"{ours['per_series_ms']:.3f} ms and DLinear's {theirs['per_series_ms']:.3f} ms "
                  f"(darts' own per-series cost: DLinear's network is a few linear maps): a ratio "
                  f"of {ours['per_series_ms'] / theirs['per_series_ms']:.2f} (slopes of the rest). "
                  f"ReinPatch's own wrapper adds {whole.wrapper_ms_per_series:+.3f} ms per series "
                  f"at {whole.series:,} series."]
    lines += ["", f"Peak RSS of the whole process (imports, panel, both fits and every "
              f"predict; `ru_maxrss`): {process_peak:.0f} MB."]
    write_markdown(out_dir / "panel.md", lines, echo=True)
    return fits


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=5000, help="series in the panel")
    parser.add_argument("--fit-series", type=int, default=200, help="series of the fit sample")
    parser.add_argument("--sizes", type=int, nargs="+", default=None,
                        help="panel prefixes to forecast (default 500, 1000, 2500 and the "
                        "whole panel)")
    parser.add_argument("--models", nargs="+", choices=["ReinPatch", "DLinear"],
                        default=["ReinPatch", "DLinear"])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    sizes = sorted(set(args.sizes or [s for s in DEFAULT_SIZES if s < args.series]
                       + [args.series]))
    if not 1 <= args.fit_series <= args.series or not all(1 <= s <= args.series for s in sizes):
        parser.error("need 1 <= --fit-series <= --series and every --sizes in [1, --series]")
    set_threads(args.threads)
    command = "python benchmarks/panel.py " + " ".join(sys.argv[1:] if argv is None else argv)
    panel = make_panel(args.series)
    rows = []
    with quiet_lightning(), warnings.catch_warnings(), tempfile.TemporaryDirectory() as work:
        # darts' notice that a model without validation data has no val_loss to checkpoint
        warnings.filterwarnings("ignore", message=".*could not find the monitored key.*")
        models = {name: fit(name, panel, args.fit_series, args.epochs, work)
                  for name in args.models}
        for name, (_, seconds) in models.items():
            print(f"[panel] {name}: fitted on {args.fit_series} series in {seconds:.1f} s")
        for size in sizes:
            rows += measure(models, panel, size, args.repeats, args.fit_series)
    write(rows, command.strip(), args.threads, args.repeats, args.series, process_peak_mb(),
          args.out_dir)


if __name__ == "__main__":
    main()
