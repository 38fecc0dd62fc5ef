"""Soak: many fit / predict / save / load cycles of a tiny ReinPatch model in one process, with
the resident memory and the open file descriptors sampled as they go (``run.py soak``).

A face's cycle goes through its public path on a 72-step noisy sine (lookback 12, horizon 3,
``d_model`` 8, one layer, one epoch) and checks what it cycles:

``darts``
    ``ReinPatchModel(...).fit``, ``predict``, ``save`` into a fresh folder, ``load``, predict
    again (identical), folder deleted.
``sktime``
    ``ReinPatchForecaster.fit``, ``update`` (training continues), ``predict``,
    ``predict_quantiles``, a pickle round trip whose forecaster predicts identically.
``cli``
    ``fit`` and ``predict`` of ``python -m reinpatch_forecast.cli`` as subprocesses (each in a
    session of its own, with a ``TMPDIR`` of the soak's) in a fresh folder; files beyond the
    outputs, processes alive in the children's sessions, zombie children and forecasts that
    differ from the first cycle's are counted.

Every ``every`` cycles, after a garbage collection (a collectable cycle is not a leak): RSS
(``VmRSS`` of ``/proc/self/status``), open descriptors (``/proc/self/fd``) and the live objects
the collector tracks. Growth counts from ``from_cycle``: the first in-process cycles fill caches
that stay (lazy imports, torch's allocator pools).
"""

from __future__ import annotations

import gc
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

from _common import status_mb

#: The model of every cycle (tests/support.py's TINY_DARTS; a benchmark does not import tests).
TINY = dict(input_chunk_length=12, output_chunk_length=3, compression_rate=3, group_size=2,
            d_model=8, n_heads=1, n_layers=1, dropout=0.0, resample_points=4, batch_size=16,
            n_epochs=1, random_state=0)
CLI_FLAGS = ["--lookback", "12", "--horizon", "3", "--compression-rate", "3", "--group-size",
             "2", "--d-model", "8", "--n-heads", "1", "--n-layers", "1", "--dropout", "0",
             "--resample-points", "4", "--batch-size", "16", "--epochs", "1", "--seed", "0"]
CLI_OUTPUTS = {"model.pt", "model.pt.ckpt", "forecast.csv", "fit.log", "predict.log"}
LENGTH, UPDATE_STEPS = 72, 12
RSS_TARGET_MB = 50.0


def sine() -> "Any":
    """The series of every cycle: a noisy sine of ``LENGTH`` hourly steps (pandas Series)."""
    import pandas as pd

    t = np.arange(LENGTH)
    values = np.sin(2 * np.pi * t / 12) + 0.1 * np.random.default_rng(0).standard_normal(LENGTH)
    return pd.Series(values, index=pd.date_range("2020-01-01", periods=LENGTH, freq="h"), name="y")


def measure(cycle: int) -> dict[str, Any]:
    """RSS (MiB), open descriptors and tracked objects after a garbage collection."""
    gc.collect()
    return {"cycle": cycle, "rss_mb": round(status_mb("VmRSS")["VmRSS"], 1),
            "fds": len(os.listdir("/proc/self/fd")) - 1,  # the listing's own descriptor
            "objects": len(gc.get_objects())}


def darts_cycle(y, index: int, state: dict) -> None:
    from reinpatch_forecast import ReinPatchModel
    from reinpatch_forecast._lightning import quiet_trainer_kwargs

    if "series" not in state:
        from darts import TimeSeries

        state["series"] = TimeSeries.from_series(y.astype(np.float32))
    series = state["series"]
    folder = tempfile.mkdtemp(prefix="soak_")
    try:
        model = ReinPatchModel(**TINY, work_dir=folder, pl_trainer_kwargs=quiet_trainer_kwargs())
        model.fit(series, verbose=False)
        expected = model.predict(3, verbose=False).values()
        model.save(os.path.join(folder, "model.pt"))
        loaded = ReinPatchModel.load(os.path.join(folder, "model.pt"))
        if not np.array_equal(expected, loaded.predict(3, series=series, verbose=False).values()):
            raise AssertionError(f"cycle {index}: the loaded model forecasts differently")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def sktime_cycle(y, index: int, state: dict) -> None:
    from reinpatch_forecast import ReinPatchForecaster

    sizes = {k: v for k, v in TINY.items() if k != "output_chunk_length"}
    forecaster = ReinPatchForecaster(**sizes, likelihood="quantile", quantiles=(0.1, 0.5, 0.9),
                                     num_samples=20)
    forecaster.fit(y.iloc[:-UPDATE_STEPS], fh=[1, 2, 3])
    forecaster.update(y.iloc[-UPDATE_STEPS:])
    points, quantiles = forecaster.predict(), forecaster.predict_quantiles(alpha=[0.1, 0.9])
    restored = pickle.loads(pickle.dumps(forecaster))
    if not (points.equals(restored.predict())
            and quantiles.equals(restored.predict_quantiles(alpha=[0.1, 0.9]))):
        raise AssertionError(f"cycle {index}: the unpickled forecaster forecasts differently")


def _processes() -> list[tuple[int, int, str]]:
    """``(parent pid, session id, state)`` of every process in ``/proc``."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            text = Path("/proc", entry, "stat").read_text()
        except OSError:  # gone since the listing
            continue
        state, ppid, _, session = text[text.rindex(")") + 2:].split()[:4]
        found.append((int(ppid), int(session), state))
    return found


def cli_cycle(y, index: int, state: dict) -> None:
    if "csv" not in state:  # the first cycle makes the soak's one folder
        root = state["root"] = Path(tempfile.mkdtemp(prefix="soak_cli_"))
        (root / "tmp").mkdir()
        state.update(csv=root / "data.csv", sessions=set(), unexpected=0, differ=0)
        y.rename_axis("date").reset_index().to_csv(state["csv"], index=False)
    root = state["root"]
    env = {**os.environ, "TMPDIR": str(root / "tmp"), "OMP_NUM_THREADS": state["threads"]}
    folder = root / f"cycle{index}"
    folder.mkdir()
    data = ["--csv", str(state["csv"]), "--quiet"]
    for name, args in (("fit", ["--target", "y", "--out", "model.pt", *CLI_FLAGS]),
                       ("predict", ["--model", "model.pt", "--out", "forecast.csv"])):
        with (folder / f"{name}.log").open("w") as log:
            child = subprocess.Popen([sys.executable, "-m", "reinpatch_forecast.cli", name,
                                      *data, *args], cwd=folder, env=env, stdout=log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
            state["sessions"].add(child.pid)  # its session id: a grandchild keeps it
            if child.wait():
                raise RuntimeError(f"{name}: {(folder / f'{name}.log').read_text()[-2000:]}")
    forecast = (folder / "forecast.csv").read_text()
    state["differ"] += forecast != state.setdefault("forecast", forecast)
    state["unexpected"] += sum(p.name not in CLI_OUTPUTS for p in folder.rglob("*"))
    shutil.rmtree(folder)


def cli_leftovers(state: dict) -> dict[str, int]:
    """Files left behind, processes alive in the children's sessions, zombie children."""
    table = _processes()
    strays = sum(s in state["sessions"] and st != "Z" for _, s, st in table)
    zombies = sum(p == os.getpid() and st == "Z" for p, _, st in table)
    files = state["unexpected"] + sum(1 for _ in (state["root"] / "tmp").rglob("*"))
    return {"leftovers": files + strays + zombies, "forecasts_differ": state["differ"]}


FACES: dict[str, Callable[[Any, int, dict], None]] = {
    "darts": darts_cycle, "sktime": sktime_cycle, "cli": cli_cycle}


def growth(samples: list[dict], from_cycle: int, leftovers: int = 0,
           forecasts_differ: int = 0) -> dict[str, Any]:
    """Growth from the first sample at or after ``from_cycle`` (else the first) to the last.

    The least-squares RSS trend is given too: RSS moves by a few MB as the allocator takes and
    returns arenas, which the two end points alone can catch at either extreme.
    """
    base = next((s for s in samples if s["cycle"] >= from_cycle), samples[0])
    last = samples[-1]
    later = [s for s in samples if s["cycle"] >= base["cycle"]]
    trend = (float(np.polyfit([s["cycle"] for s in later], [s["rss_mb"] for s in later], 1)[0])
             if len(later) > 1 else 0.0)
    rss = last["rss_mb"] - base["rss_mb"]
    met = (rss < RSS_TARGET_MB and last["fds"] <= base["fds"] and not leftovers
           and not forecasts_differ)
    return {"from_cycle": base["cycle"], "rss_mb_from": base["rss_mb"],
            "rss_mb_to": last["rss_mb"], "rss_growth_mb": round(rss, 1),
            "rss_trend_mb_per_100": round(100 * trend, 2), "fds_from": base["fds"],
            "fds_to": last["fds"], "objects_growth": last["objects"] - base["objects"],
            "leftovers": leftovers, "forecasts_differ": forecasts_differ,
            "verdict": "target met" if met else "TARGET MISSED"}


def soak(face: str, cycles: int, every: int, from_cycle: int, threads: int = 1) -> dict[str, Any]:
    """Run ``cycles`` cycles of ``face``, measuring before the first and every ``every``;
    returns the record's measured fields (the samples included)."""
    from reinpatch_forecast._lightning import quiet_lightning

    y, state = sine(), {"threads": str(threads)}
    samples = []
    try:
        with quiet_lightning(), warnings.catch_warnings():
            # Lightning's notices on one-batch epochs and darts' on `update`: about the sizes
            warnings.simplefilter("ignore")
            samples.append(measure(0))
            for index in range(1, cycles + 1):
                FACES[face](y, index, state)
                if index % every == 0 or index == cycles:
                    samples.append(measure(index))
                    print(f"[soak {face}] {samples[-1]}", flush=True)
        extra = cli_leftovers(state) if face == "cli" else {}
    finally:
        if "root" in state:
            shutil.rmtree(state["root"], ignore_errors=True)
    return {"cycles": cycles, **growth(samples, from_cycle, **extra), "samples": samples}
