"""Many-series prediction: one global model fitted on a sample of a panel of short series, then
one ``predict`` call for the first ``n`` series of the panel (``run.py panel``).

The panel: ``SERIES`` univariate hourly float32 series of 48 to 120 steps (noisy sines of
varied period, level, scale and trend). Each model is fitted on ``FIT_SAMPLE`` of them
(lookback 24, horizon 6), then predicts 6 steps of the first ``n`` series in one
``model.predict(n=6, series=[...], batch_size=512)`` call, for every ``n`` of ``SIZES``: the
fastest of ``REPEATS`` calls after a warm-up (other processes on the cores slow a call, never
speed it up). Memory: the RSS before the calls and the peak of one call (``VmHWM``, reset just
before it through ``/proc/self/clear_refs``). The per-series cost is the slope of a
least-squares line through the times; its worst gap says how linear they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from _common import seconds, status_mb

SERIES, FIT_SAMPLE, SIZES, REPEATS = 5_000, 200, (500, 1_000, 2_500, 5_000), 5
LOOKBACK, HORIZON = 24, 6


def make_panel(count: int = SERIES, seed: int = 0) -> list:
    """``count`` short noisy sines (darts ``TimeSeries``, float32) of varied shape."""
    import pandas as pd
    from darts import TimeSeries

    rng = np.random.default_rng(seed)
    lengths = rng.integers(48, 121, count)
    period, level, scale, trend = (rng.uniform(6, 30, count), rng.normal(0, 5, count),
                                   rng.uniform(0.5, 3, count), rng.normal(0, 0.02, count))
    start = pd.Timestamp("2020-01-01")
    panel = []
    for i, length in enumerate(lengths):
        t = np.arange(length)
        values = (level[i] + trend[i] * t + scale[i] * np.sin(2 * np.pi * t / period[i])
                  + 0.1 * scale[i] * rng.standard_normal(length)).astype(np.float32)
        panel.append(TimeSeries.from_times_and_values(
            pd.date_range(start, periods=length, freq="h"), values))
    return panel


def build(model: str, seed: int = 0):
    """The model a row names: ReinPatch at its defaults but a small network, or darts' DLinear."""
    from reinpatch_forecast._lightning import quiet_trainer_kwargs

    common = dict(input_chunk_length=LOOKBACK, output_chunk_length=HORIZON, n_epochs=3,
                  random_state=seed, pl_trainer_kwargs=quiet_trainer_kwargs())
    if model == "dlinear":
        from darts.models import DLinearModel

        return DLinearModel(use_reversible_instance_norm=True, **common)
    from reinpatch_forecast import ReinPatchModel

    return ReinPatchModel(d_model=16, n_layers=1, compression_rate=4, **common)


def panel(model: str, seed: int = 0) -> list[dict[str, Any]]:
    """Fit ``model`` on the panel's sample and time its predict calls; one row per size."""
    from reinpatch_forecast._lightning import quiet_lightning

    series = make_panel(seed=seed)
    fitted = build(model, seed)
    with quiet_lightning():
        fit_seconds = seconds(lambda: fitted.fit(series[:: SERIES // FIT_SAMPLE][:FIT_SAMPLE]))
        rows = [_time_predict(fitted, series[:n]) | {"fit_s": fit_seconds} for n in SIZES]
    slope, fixed = np.polyfit([r["series"] for r in rows], [r["predict_s"] for r in rows], 1)
    gap = max(abs(r["predict_s"] - (fixed + slope * r["series"])) / (fixed + slope * r["series"])
              for r in rows)
    return [{**r, "line_ms_per_series": float(1000 * slope), "line_fixed_s": float(fixed),
             "line_worst_gap_pct": float(100 * gap)} for r in rows]


def _time_predict(model, series: list) -> dict[str, float]:
    """The fastest of ``REPEATS`` predict calls on ``series`` after a warm-up, the RSS before
    them and the peak RSS of the last one."""
    call = dict(n=HORIZON, series=series, batch_size=512, verbose=False)
    model.predict(**call)
    rss_before, times = status_mb("VmRSS")["VmRSS"], []
    for _ in range(REPEATS):
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
        times.append(seconds(lambda: model.predict(**call)))
    return {"series": len(series), "predict_s": min(times),
            "ms_per_series": 1000 * min(times) / len(series), "rss_before_mb": rss_before,
            "peak_rss_mb": status_mb("VmHWM")["VmHWM"]}
