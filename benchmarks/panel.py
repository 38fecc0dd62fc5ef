"""A panel of many short series: one global ReinPatchModel fitted on a sample, then forecasts
for the whole panel in one darts ``predict`` call, against darts' own DLinearModel.

The panel holds ``--series`` univariate hourly series (5,000 by default) of 48 to 120 steps,
each a noisy sine of its own period, level, scale and trend (float32: no cast on the way in).
Both models train globally on a sample of ``--fit-series`` of them (200), then forecast ``H``
steps of 500 and of every series in one ``predict(n, series=[...])`` call.

What is measured, per model:

- the time of one ``predict`` of the whole panel, and of the first 500 series (medians over
  ``--repeats`` after a warm-up): per-series time should not grow with the panel (linear);
- the peak resident memory (``VmHWM`` of ``/proc/self/status``) of the process and, where the
  kernel lets a process reset it (``/proc/self/clear_refs``), of the whole-panel predict alone;
- the network's own share: the module's forward pass over the same windows in batches of the
  same size, timed alone. ``predict`` minus that share is what darts and the model's wrapper
  spend per series (datasets, batching, the output ``TimeSeries``). DLinear's network is a few
  linear maps, so DLinear's remainder is darts' own per-series cost; ReinPatch's remainder
  should match it ("no per-series Python overhead beyond darts' own").

Writes ``benchmarks/results/panel.md`` and ``panel.csv`` (with the commit and the date).

python benchmarks/panel.py                                        # about 5 minutes on a busy core
python benchmarks/panel.py --series 60 --fit-series 20 --sizes 20 60 --repeats 1 --out-dir /tmp/p
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (RESULTS, git_commit, median_seconds, set_threads, utc_now,  # noqa: E402
                     write_csv, write_markdown)

# Imported before quiet_lightning runs: importing Lightning sets its loggers' level.
from darts import TimeSeries  # noqa: E402
from darts.models import DLinearModel  # noqa: E402
from darts.utils.data.torch_datasets.utils import PLModuleInput  # noqa: E402

from reinpatch_forecast import ReinPatchModel  # noqa: E402
from reinpatch_forecast._lightning import quiet_lightning, quiet_trainer_kwargs  # noqa: E402

LOOKBACK, HORIZON = 24, 6
MIN_LENGTH, MAX_LENGTH = 48, 120
PREDICT_BATCH = 512
#: Panel prefixes forecast by default (the whole panel is always one of them).
DEFAULT_SIZES = (500, 1000, 2500)
FIELDS = ["model", "series", "predict_seconds", "ms_per_series", "network_seconds",
          "rest_ms_per_series", "rss_before_mb", "predict_peak_rss_mb", "fit_seconds",
          "fit_series"]


@dataclass
class Row:
    """One model's forecast of the first ``series`` series of the panel."""

    model: str
    series: int
    predict_seconds: float
    ms_per_series: float
    network_seconds: float
    rest_ms_per_series: float
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


def network_seconds(model, panel: list[TimeSeries], repeats: int) -> float:
    """Median time of the fitted model's Lightning module over the last input windows of
    ``panel``, in batches of :data:`PREDICT_BATCH` (the forward pass ``predict`` makes)."""
    module = model.model
    windows = np.stack([s.values(copy=False)[-LOOKBACK:] for s in panel])  # (S, L, 1)
    batches = torch.as_tensor(windows, dtype=module.dtype).split(PREDICT_BATCH)
    was_training = module.training
    module.eval()

    def forward() -> None:
        with torch.inference_mode():
            for x in batches:  # (b, L, 1): the past target only, as darts' predict gives it
                module._produce_predict_output(PLModuleInput(past_target=x))

    try:
        return median_seconds(forward, repeats, warmup=1)
    finally:
        # as Lightning's predict loop does: darts' default loss module is one object shared by
        # every model of the process, and would stay in eval mode for the next model's fit
        module.train(was_training)


def measure(name: str, panel: list[TimeSeries], fit_count: int, sizes: list[int],
            repeats: int, epochs: int, work_dir: str) -> list[Row]:
    """Fit ``name`` on a sample of ``fit_count`` series, then time the forecasts of the first
    ``size`` series of the panel for each of ``sizes``."""
    chosen = np.random.default_rng(1).choice(len(panel), fit_count, replace=False)
    sample = [panel[i] for i in chosen]
    model = build(name, work_dir, epochs)
    began = time.perf_counter()
    model.fit(sample, verbose=False)
    fit_seconds = time.perf_counter() - began
    rows = []
    for size in sizes:
        part = panel[:size]

        def predict() -> None:
            model.predict(HORIZON, series=part, batch_size=PREDICT_BATCH, verbose=False)

        gc.collect()
        before = status_mb("VmRSS")
        can_reset = reset_peak_rss()
        seconds = median_seconds(predict, repeats, warmup=1)
        peak = status_mb("VmHWM") if can_reset else None
        forward = network_seconds(model, part, repeats)
        rows.append(Row(model=name, series=size, predict_seconds=seconds,
                        ms_per_series=1000 * seconds / size, network_seconds=forward,
                        rest_ms_per_series=1000 * (seconds - forward) / size,
                        rss_before_mb=before, predict_peak_rss_mb=peak,
                        fit_seconds=fit_seconds, fit_series=fit_count))
        print(f"[panel] {name}: {size} series in {seconds:.2f} s "
              f"({rows[-1].ms_per_series:.3f} ms/series; network {forward:.2f} s)", flush=True)
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


def write(rows: list[Row], command: str, threads: int, panel_size: int, process_peak: float,
          out_dir: Path) -> dict[str, dict[str, float]]:
    """panel.md and panel.csv; returns each model's :func:`linear_fit` of predict and rest."""
    commit, date = git_commit(), utc_now()
    write_csv(out_dir / "panel.csv", [asdict(r) for r in rows], FIELDS, commit, date)
    by_model: dict[str, list[Row]] = {}
    for row in rows:
        by_model.setdefault(row.model, []).append(row)
    fits = {}
    for name, model_rows in by_model.items():
        rest = [Row(**{**asdict(r), "predict_seconds": r.predict_seconds - r.network_seconds})
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
        "(medians after a warm-up). *network*: the Lightning module's forward pass over the "
        "same windows in the same batches, timed alone; *rest*: predict minus network: what "
        "darts and the model's wrapper spend on the series (checks, datasets, batching, the "
        "output `TimeSeries`). ReinPatch: d_model 16, one layer, compression rate 4 (6 "
        "tokens), the learned patcher. DLinear: darts' `DLinearModel` with RevIN. Memory: RSS "
        "(`/proc/self/status`, MiB) just before the predict calls, and their peak (`VmHWM`, "
        "reset before them through `/proc/self/clear_refs`).",
        "",
        "| model | series | predict (s) | ms / series | network (s) | rest (ms / series) | "
        "RSS before (MB) | peak RSS of the predict (MB) | fit (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        peak = "–" if row.predict_peak_rss_mb is None else f"{row.predict_peak_rss_mb:.0f}"
        lines.append(f"| {row.model} | {row.series:,} | {row.predict_seconds:.2f} | "
                     f"{row.ms_per_series:.3f} | {row.network_seconds:.3f} | "
                     f"{row.rest_ms_per_series:.3f} | {row.rss_before_mb:.0f} | {peak} | "
                     f"{row.fit_seconds:.1f} |")
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
        lines += ["", f"Per series, beyond its network, ReinPatch's predict costs "
                  f"{ours['per_series_ms']:.3f} ms and DLinear's {theirs['per_series_ms']:.3f} ms "
                  f"(darts' own per-series cost: DLinear's network is a few linear maps): a ratio "
                  f"of {ours['per_series_ms'] / theirs['per_series_ms']:.2f}."]
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
    parser.add_argument("--repeats", type=int, default=3)
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
        for name in args.models:
            rows += measure(name, panel, args.fit_series, sizes, args.repeats, args.epochs, work)
    write(rows, command.strip(), args.threads, args.series, process_peak_mb(), args.out_dir)


if __name__ == "__main__":
    main()
