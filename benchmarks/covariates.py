"""Covariates benchmark: does a model forecast ETTh1's oil temperature better given the loads
(past covariates) and the calendar (future covariates)? (issue 17)

The target is ``OT`` alone (univariate), lookback 96, under the LTSF protocol and budget of
``ltsf.py`` (its split and train-only scaler, its training settings and early stopping, its
model builder; scores over *all* stride-1 windows by ``_protocol.evaluate_windows``). Three
settings:

- ``target``: OT alone;
- ``load``: plus the six load columns (HUFL, HULL, MUFL, MULL, LUFL, LULL) as past covariates,
  scaled by the same train-only scaler as OT (they are columns of ltsf.py's scaled splits);
- ``load+calendar``: plus the calendar as future covariates, built with darts'
  ``datetime_attribute_timeseries``: hour of day, day of week and month, each scaled to [0, 1]
  by its range (hour / 23, weekday / 6, month index / 11).

Models: ReinPatch with the learned patcher (ltsf.py's ``learned``, the default policy) and with
uniform patches (R = 8), darts' ``TiDEModel`` (hidden size 64, like TSMixer's default) and
``TSMixerModel`` (ltsf.py's peer), both with reversible instance norm and their learning rate
chosen on validation MSE from ltsf.py's ``PEER_LRS``. Every model gets the same covariates
through darts' ``fit`` / ``predict``; each scored window is forecast by ``predict`` with the
covariates of its own span (``covariate_predict_fn``). Every finished run is appended to
``benchmarks/results/covariates_runs.jsonl`` (resumable, keyed like ltsf.py's ``RunSpec``); the
report (``covariates.md``, ``covariates.csv``) is rebuilt from it after every run.

Examples
--------
python benchmarks/covariates.py                           # the full table (H = 96 and 336)
python benchmarks/covariates.py --horizons 96 --models uniform --settings target load
python benchmarks/covariates.py --check-scoring           # the scoring against ltsf.py's
python benchmarks/covariates.py --report-only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (RESULTS, decoded_patch_statistics, format_mean_std, git_commit,  # noqa: E402
                     load_jsonl, set_threads, utc_now, write_csv, write_markdown)
from _protocol import (BASELINES, PredictFn, baseline_predict_fn,  # noqa: E402
                       darts_predict_fn, evaluate_windows)
from ltsf import (PEER_LRS, RunSpec, _aggregate, _build_model, add_training_arguments,  # noqa: E402
                  load_splits, pick_on_validation, plan, protocol, run_missing,
                  training_settings)

CACHE_NAME = "covariates_runs.jsonl"
TARGET = "OT"
LOAD_COLUMNS = ("HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL")
#: Calendar attributes of the future covariates and the divisor that maps each onto [0, 1].
CALENDAR = (("hour", 23), ("day_of_week", 6), ("month", 11))  # darts' month is 0..11
CALENDAR_KEY = "hour/23,day_of_week/6,month/11"
SETTINGS = ("target", "load", "load+calendar")
SETTING_NAMES = {"target": "OT alone", "load": "+ loads (past)",
                 "load+calendar": "+ loads + calendar (future)"}
MODELS = ("learned", "uniform", "tide", "tsmixer")
MODEL_NAMES = {"learned": "ReinPatch learned (R=8)", "uniform": "ReinPatch uniform (R=8)",
               "tide": "TiDE", "tsmixer": "TSMixer", "repeat": "Repeat (last value)"}
TIDE_HIDDEN = 64
#: The constructor arguments ltsf.py's ``_build_model`` gives every darts model (budget,
#: early-stopping trainer, seed, checkpoints, learning rate); TiDE, absent from ltsf.py, takes
#: them from a model built there.
#: The code a run's commit stamp answers for (uncommitted changes to it are named).
CODE_PATHS = ("reinpatch_forecast", "benchmarks/covariates.py", "benchmarks/ltsf.py",
              "benchmarks/_protocol.py", "benchmarks/_common.py")
SHARED_ARGUMENTS = ("input_chunk_length", "output_chunk_length", "batch_size", "n_epochs",
                    "random_state", "pl_trainer_kwargs", "save_checkpoints", "force_reset",
                    "work_dir", "optimizer_kwargs")


# -- data --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CovariateData:
    """The scaled target of each split and the covariates over all rows of the splits.

    Attributes
    ----------
    target
        ``{"train" | "val" | "test": TimeSeries}``: OT (one component), time-indexed; val and
        test include their lookback rows.
    load
        The six load columns over the rows of all three splits.
    calendar
        The calendar attributes over the same rows, in [0, 1].
    """

    target: dict
    load: Any
    calendar: Any

    def array(self, split: str) -> np.ndarray:
        """The target of ``split`` as ``(T, 1)`` float32 (what ``evaluate_windows`` scores)."""
        return self.target[split].values(copy=False)

    def covariates(self, setting: str) -> dict[str, Any]:
        """The ``past_covariates`` / ``future_covariates`` of a setting (darts' names)."""
        if setting not in SETTINGS:
            raise ValueError(f"unknown setting {setting!r}: use one of {SETTINGS}")
        found = {}
        if setting in ("load", "load+calendar"):
            found["past_covariates"] = self.load
        if setting == "load+calendar":
            found["future_covariates"] = self.calendar
        return found


def calendar_covariates(index, tz: str | None = None) -> Any:
    """Hour of day, day of week and month of ``index`` (a DatetimeIndex), each in [0, 1].

    ``tz``: the time zone whose wall clock the attributes read, for a naive index of UTC dates
    (``"Australia/Melbourne"`` for vic_elec); the series keeps ``index`` as its time index.
    """
    from darts.utils.timeseries_generation import datetime_attribute_timeseries

    parts = [datetime_attribute_timeseries(index, attribute, dtype=np.float32, tz=tz) / divisor
             for attribute, divisor in CALENDAR]
    return parts[0].stack(parts[1]).stack(parts[2])


def split_rows(splits) -> tuple[np.ndarray, Any]:
    """Every row of the three scaled splits once, ``(T, C)``, with their evenly spaced dates
    (a ``DatetimeIndex`` with its ``freq``)."""
    import pandas as pd

    lookback = splits.lookback
    # val and test start `lookback` rows before their boundary: their rows after the lookback
    # continue the previous split's, so the three together cover every row once.
    rows = np.concatenate([splits.train, splits.val[lookback:], splits.test[lookback:]])
    dates = splits.dates["train"].append([splits.dates["val"][lookback:],
                                          splits.dates["test"][lookback:]])
    index = pd.DatetimeIndex(dates, freq="infer")  # raises if the rows are not regular
    if index.freq is None:
        raise ValueError("the splits' dates are not evenly spaced")
    return rows, index


def time_series(values: np.ndarray, dates, names, freq) -> Any:
    """``values`` ``(T, C)`` as a darts series on ``dates`` (spaced by ``freq``)."""
    import pandas as pd
    from darts import TimeSeries

    return TimeSeries.from_times_and_values(
        pd.DatetimeIndex(dates, freq=freq), np.ascontiguousarray(values), columns=list(names))


def covariate_data(splits) -> CovariateData:
    """OT and the covariates from ltsf.py's scaled splits (all seven columns, train-only
    scaler), as time-indexed darts series."""
    columns = list(splits.columns)
    target, loads = columns.index(TARGET), [columns.index(c) for c in LOAD_COLUMNS]
    rows, index = split_rows(splits)
    return CovariateData(
        target={name: time_series(splits.split(name)[:, [target]], splits.dates[name],
                                  [TARGET], index.freq)
                for name in ("train", "val", "test")},
        load=time_series(rows[:, loads], index, LOAD_COLUMNS, index.freq),
        calendar=calendar_covariates(index),
    )


# -- scoring -----------------------------------------------------------------------------------


def covariate_predict_fn(model, series, horizon: int, covariates: dict[str, Any]) -> PredictFn:
    """A ``PredictFn`` for ``evaluate_windows(predict, series.values(), L, H)`` that forecasts
    each window with the covariates of its own span.

    ``evaluate_windows`` hands the windows over in order, batch after batch; this function
    counts them, cuts the same windows out of the time-indexed ``series`` and checks that they
    are the ones it was given. Each batch is one ``model.predict`` call (darts' batch size =
    the batch), every window with the covariate series (darts picks each window's span by its
    dates), as ``_protocol.darts_predict_fn`` does without covariates.
    """
    from reinpatch_forecast._lightning import quiet_lightning

    values = series.values(copy=False)
    lookback = model.input_chunk_length
    position = [0]  # the first window of the next batch

    def predict(x: np.ndarray) -> np.ndarray:
        start = position[0]
        count = len(x)
        if not np.array_equal(x, np.stack([values[s:s + lookback]
                                           for s in range(start, start + count)])):
            raise RuntimeError(f"windows {start}..{start + count} are not the next ones of "
                               "the series: score with one evaluate_windows call per function")
        windows = [series[s:s + lookback] for s in range(start, start + count)]
        given = {name: [value] * count for name, value in covariates.items()}
        with quiet_lightning():
            forecasts = model.predict(horizon, series=windows, batch_size=count,
                                      verbose=False, **given)
        position[0] += count
        return np.stack([forecast.values(copy=False) for forecast in forecasts])  # (b, H, 1)

    return predict


def score(model, data: CovariateData, split: str, setting: str, horizon: int) -> dict:
    """``evaluate_windows`` of a fitted model on every stride-1 window of ``split``."""
    predict = covariate_predict_fn(model, data.target[split], horizon, data.covariates(setting))
    return evaluate_windows(predict, data.array(split), model.input_chunk_length, horizon)


def historical_scores(model, data: CovariateData, split: str, setting: str,
                      horizon: int) -> dict:
    """The same scores through darts' ``historical_forecasts`` (an independent check)."""
    from reinpatch_forecast._lightning import quiet_lightning

    series = data.target[split]
    lookback = model.input_chunk_length
    with quiet_lightning():
        forecasts = model.historical_forecasts(
            series, start=lookback, start_format="position", forecast_horizon=horizon,
            stride=1, retrain=False, last_points_only=False, overlap_end=False, verbose=False,
            **data.covariates(setting))
    values = series.values(copy=False).astype(np.float64)
    errors = np.stack([forecast.values(copy=False) - values[lookback + i:lookback + i + horizon]
                       for i, forecast in enumerate(forecasts)])
    return {"mse": float(np.mean(errors ** 2)), "mae": float(np.mean(np.abs(errors))),
            "n_windows": len(forecasts)}


# -- runs --------------------------------------------------------------------------------------


def make_plan(horizons: list[int], settings: list[str], models: list[str], lookback: int,
              training: dict[str, Any], seeds: list[int], dataset: str = "ETTh1",
              repeat: bool = True, backbone: str = "flatten") -> list[RunSpec]:
    """Every run, horizon by horizon and setting by setting: ltsf.py's runs of each family
    (learned with the default policy, uniform R=8, TSMixer at each of ``PEER_LRS``), TiDE at
    each of ``PEER_LRS``, the setting (and the calendar's encoding) in the params; ``repeat``
    adds the untrained Repeat baseline once per horizon. The ReinPatch rows run on ``backbone``
    (a name of ltsf.py's ``BACKBONES``): this table's rows are the flatten head's, so that is
    the default here and its cached runs stay this table's runs."""
    specs = []
    for horizon in horizons:
        if repeat:
            specs.append(RunSpec(dataset, horizon, "repeat", {"target": TARGET}, lookback, {}))
        for setting in settings:
            extra = {"target": TARGET, "covariates": setting}
            if setting == "load+calendar":
                extra["calendar"] = CALENDAR_KEY
            for seed in seeds:
                seeded = {**training, "seed": seed}
                for model in models:
                    if model == "tide":
                        found = tide_runs(dataset, horizon, lookback, seeded)
                    else:
                        found = plan([dataset], [horizon], [model], lookback, seeded,
                                     seeds=[seed], uniform_sizes=(8,), backbone=backbone)
                    specs += [replace(s, params={**s.params, **extra}) for s in found]
    return specs


def tide_runs(dataset: str, horizon: int, lookback: int,
              settings: dict[str, Any]) -> list[RunSpec]:
    """TiDE's runs of one cell: one per learning rate of ``PEER_LRS``, as ltsf.py's peers."""
    return [RunSpec(dataset, horizon, "tide", {"lr": lr, "hidden_size": TIDE_HIDDEN}, lookback,
                    settings) for lr in PEER_LRS]


def build_model(spec: RunSpec, work_dir: Path, progress: bool = False):
    """ltsf.py's model of ``spec``; TiDE with the arguments ltsf.py gives its darts peers."""
    if spec.model != "tide":
        return _build_model(spec, work_dir, progress)
    from darts.models import TiDEModel

    template = _build_model(replace(spec, model="tsmixer"), work_dir, progress)
    shared = {name: template.model_params[name] for name in SHARED_ARGUMENTS}
    return TiDEModel(use_reversible_instance_norm=True, hidden_size=spec.params["hidden_size"],
                     model_name=template.model_params["model_name"].replace("ltsf_", "cov_"),
                     **shared)


def code_commit() -> str:
    """The commit of the code a process runs: ``HEAD`` when called (call it at the start: the
    branch may move during a long run), naming uncommitted changes to the package and to the
    benchmark code."""
    return git_commit(CODE_PATHS)


def run_one(spec: RunSpec, data: CovariateData, out_dir: Path, progress: bool = False,
            keep_model: bool = False, commit: str | None = None):
    """Train (unless an untrained baseline of ``_protocol.BASELINES``) and score one run on
    ``data``; returns its cache record, stamped with ``commit`` (default: :func:`code_commit`
    now)."""
    setting = spec.params.get("covariates", "target")
    covariates = data.covariates(setting)
    began = time.perf_counter()
    epochs = 0
    model = None
    if spec.model not in BASELINES:
        work_dir = Path(out_dir) / "_ltsf_work"  # ltsf.py's checkpoints (its builder, unique
        # model names); the folder is git-ignored
        work_dir.mkdir(parents=True, exist_ok=True)
        model = build_model(spec, work_dir, progress)
        model.fit(data.target["train"], val_series=data.target["val"], load_best=True,
                  max_samples_per_ts=spec.settings["max_train_windows"], verbose=progress,
                  **covariates, **{f"val_{name}": value for name, value in covariates.items()})
        epochs = int(model.trainer.current_epoch)
    train_seconds = time.perf_counter() - began
    scores = {}
    for split in ("val", "test"):
        if model is None:
            scores[split] = evaluate_windows(
                baseline_predict_fn(spec.model, spec.horizon, spec.params), data.array(split),
                spec.lookback, spec.horizon)
        else:
            scores[split] = score(model, data, split, setting, spec.horizon)
    record = {
        "key": spec.key, "spec": asdict(spec), "label": spec.label, "setting": setting,
        "val_mse": scores["val"]["mse"], "val_mae": scores["val"]["mae"],
        "test_mse": scores["test"]["mse"], "test_mae": scores["test"]["mae"],
        "test_mae_per_channel": scores["test"]["mae_per_channel"],
        "test_windows": scores["test"]["n_windows"], "epochs": epochs,
        "train_seconds": round(train_seconds, 1),
        "score_seconds": round(time.perf_counter() - began - train_seconds, 1),
        "commit": commit or code_commit(), "date": utc_now(), "settings": spec.settings,
        "machine": machine(),
    }
    if spec.model == "learned":
        record["patches"] = decoded_patch_statistics(model, data.array("test"), spec.lookback)
    return (record, model) if keep_model else record


def machine() -> str:
    """Where a run was made (its times are of this machine)."""
    import torch

    return (f"{platform.machine()}, {os.cpu_count()} CPUs, {torch.get_num_threads()} torch "
            "thread(s)")


def check_scoring(data: CovariateData, horizon: int, lookback: int, out_dir: Path,
                  training: dict[str, Any], settings=("target", "load+calendar")) -> list[dict]:
    """Score one quickly trained ReinPatch (uniform R=8) per setting three ways on the test
    split: this script's ``score``, darts' ``historical_forecasts`` and, without covariates,
    ltsf.py's ``darts_predict_fn``. Returns one row per setting."""
    rows = []
    for setting in settings:
        spec = make_plan([horizon], [setting], ["uniform"], lookback, training,
                         [training["seed"]], repeat=False)[0]
        record, model = run_one(spec, data, out_dir, keep_model=True)
        row = {"setting": setting, "ours": score(model, data, "test", setting, horizon),
               "historical_forecasts": historical_scores(model, data, "test", setting, horizon)}
        if setting == "target":
            row["ltsf"] = evaluate_windows(darts_predict_fn(model, horizon), data.array("test"),
                                           spec.lookback, horizon)
        rows.append(row)
    return rows


# -- report ------------------------------------------------------------------------------------


def rows_for_report(runs: list[dict], training: dict[str, Any] | None) -> list[dict]:
    """One row per (horizon, model, setting): seeds averaged (ltsf.py's ``_aggregate``); each
    darts peer at the learning rate picked on validation (ltsf.py's ``pick_on_validation``)."""
    wanted = None if training is None else protocol(training)
    groups: dict[tuple, list[dict]] = {}
    for record in runs:
        spec = record["spec"]
        if spec["model"] != "repeat" and wanted is not None and \
                protocol(spec["settings"]) != wanted:
            continue
        setting = record.get("setting", "target")
        groups.setdefault((spec["horizon"], spec["model"], setting, spec["params"].get("lr")),
                          []).append(record)
    by_cell: dict[tuple, list[tuple[Any, list[dict]]]] = {}
    for (horizon, model, setting, lr), group in sorted(groups.items(), key=str):
        by_cell.setdefault((horizon, model, setting), []).append((lr, group))
    rows = []
    for (horizon, model, setting), tried in by_cell.items():
        lr, group = tried[pick_on_validation([group for _, group in tried])]
        rows.append({"horizon": horizon, "model": MODEL_NAMES.get(model, model), "family": model,
                     "setting": setting, "lr": lr, **_aggregate(group), "lrs_tried": len(tried)})
    return sorted(rows, key=lambda r: (r["horizon"], list(MODEL_NAMES).index(
        r["family"]) if r["family"] in MODEL_NAMES else 99, SETTINGS.index(r["setting"])))


CSV_FIELDS = ["horizon", "model", "setting", "test_mse", "test_mse_std", "test_mae", "val_mse",
              "lr", "n_seeds", "seeds", "epochs", "train_seconds", "commit", "date"]


def _cell(row: dict | None, best: float | None) -> str:
    if row is None:
        return "– | –"
    mse = format_mean_std(row["test_mse"], row["test_mse_std"], row["n_seeds"])
    if row["test_mse"] == best:
        mse = f"**{mse}**"
    if row["lr"] is not None:
        mse += f" [{row['lr']:g}" + ("" if row["lrs_tried"] == len(PEER_LRS) else ", untuned") \
            + "]"
    return f"{mse} | {row['test_mae']:.4f}"


def write_report(runs: list[dict], out_dir: Path, training: dict[str, Any] | None,
                 command: str) -> list[dict]:
    rows = rows_for_report(runs, training)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_csv(out_dir / "covariates.csv", rows, CSV_FIELDS)
    shown = {k: v for k, v in (training or {}).items() if k != "seed"}
    commits = sorted({c for r in rows for c in r["commit"].split("/")})
    machines = sorted({r["machine"] for r in runs if r.get("machine")})
    unrecorded = ("" if all(r.get("machine") for r in runs) else
                  f"{' and ' if machines else ''}runs that did not record their machine")
    lines = [
        "# Covariates benchmark (ETTh1, target OT, normalised MSE / MAE, all test windows)",
        "",
        f"Generated by `{command}` from `{out_dir.name}/{CACHE_NAME}` on {utc_now()} at commit "
        f"`{git_commit()}`; the runs were made at commit(s) "
        f"{', '.join(f'`{c}`' for c in commits) or '–'} (each row's commit and date are in "
        "`covariates.csv`).",
        "",
        "Protocol: `ltsf.py`'s split and train-only scaler (fitted on all seven columns; OT and "
        "the loads are taken from those scaled splits), lookback 96, univariate target OT, "
        "early stopping on validation MSE with the best epoch restored, scored by "
        "`benchmarks/_protocol.py`'s `evaluate_windows` over every stride-1 test window, each "
        "forecast by the model's darts `predict` with the covariates of its own span. "
        "Settings: **OT alone**; **+ loads (past)**: HUFL, HULL, MUFL, MULL, LUFL, LULL as past "
        "covariates; **+ loads + calendar (future)**: also hour of day, day of week and month "
        "(darts' `datetime_attribute_timeseries`, each scaled to [0, 1] by its range: hour/23, "
        "weekday/6, month index/11) as future covariates. Models: ReinPatch with the learned "
        "patcher (default policy) and with uniform patches, R = 8; darts' TiDE (hidden size "
        f"{TIDE_HIDDEN}) and TSMixer (darts' default size, as in `ltsf.py`), both with reversible "
        f"instance norm, learning rate chosen on validation MSE from {PEER_LRS} per cell "
        "(in brackets). Bold: the lowest test MSE of a column.",
        f"Training settings of every trained run (seeds aside): `{json.dumps(shown)}`. "
        f"Made on: {'; '.join(machines) or '–'}{unrecorded} (train s are of that machine).",
        "",
    ]
    for horizon in sorted({r["horizon"] for r in rows}):
        here = [r for r in rows if r["horizon"] == horizon]
        best = {s: min((r["test_mse"] for r in here
                        if r["setting"] == s and r["family"] != "repeat"), default=None)
                for s in SETTINGS}
        lines += [f"## H = {horizon}", "",
                  "| model | " + " | ".join(f"{SETTING_NAMES[s]} MSE | MAE" for s in SETTINGS)
                  + " |", "|---|" + "---|---|" * len(SETTINGS)]
        for family in [m for m in MODELS if any(r["family"] == m for r in here)]:
            cells = {r["setting"]: r for r in here if r["family"] == family}
            lines.append(f"| {MODEL_NAMES[family]} | "
                         + " | ".join(_cell(cells.get(s), best[s]) for s in SETTINGS) + " |")
        for row in (r for r in here if r["family"] == "repeat"):
            lines += ["", f"{row['model']}: test MSE {row['test_mse']:.4f}, MAE "
                      f"{row['test_mae']:.4f}."]
        lines += ["", "| model | setting | test MSE | test MAE | val MSE | epochs | train s | "
                  "commit |", "|---|---|---|---|---|---|---|---|"]
        for row in (r for r in here if r["family"] != "repeat"):
            lr = "" if row["lr"] is None else f" (lr={row['lr']:g})"
            lines.append(
                f"| {row['model']}{lr} | {SETTING_NAMES[row['setting']]} | "
                f"{format_mean_std(row['test_mse'], row['test_mse_std'], row['n_seeds'])} | "
                f"{row['test_mae']:.4f} | {row['val_mse']:.4f} | {row['epochs']:.3g} | "
                f"{row['train_seconds']:.0f} | {row['commit']} |")
        lines.append("")
    write_markdown(out_dir / "covariates.md", lines)
    return rows


# -- command line ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ETTh1", choices=["ETTh1", "ETTh2", "ETTm1",
                                                               "ETTm2"])
    parser.add_argument("--horizons", nargs="+", type=int, default=[96, 336])
    parser.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS))
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--lookback", type=int, default=96)
    add_training_arguments(parser)
    parser.add_argument("--out-dir", type=Path, default=RESULTS,
                        help="folder of the run cache and the report")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--check-scoring", action="store_true",
                        help="train one uniform ReinPatch per setting (target, load+calendar) "
                             "at the first horizon and print its test scores three ways; "
                             "writes nothing")
    args = parser.parse_args(argv)
    set_threads(args.threads)
    training = training_settings(args, args.seeds[0])
    cache = args.out_dir / CACHE_NAME
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["python benchmarks/covariates.py", *given])

    if args.check_scoring:
        horizon = args.horizons[0]
        data = covariate_data(load_splits(args.dataset, args.lookback, horizon, args.data_dir))
        for row in check_scoring(data, horizon, args.lookback, args.out_dir, training):
            ours = row["ours"]
            for way in ("ours", "historical_forecasts", "ltsf"):
                if way in row:
                    found = row[way]
                    print(f"[covariates] check {row['setting']:>13} {way:>20}: MSE "
                          f"{found['mse']:.10f} MAE {found['mae']:.10f} "
                          f"({found['n_windows']} windows; MSE - ours "
                          f"{found['mse'] - ours['mse']:+.1e})", flush=True)
        return

    if not args.report_only:
        specs = make_plan(args.horizons, args.settings, args.models, args.lookback, training,
                          args.seeds, args.dataset)
        data_of: dict[int, CovariateData] = {}
        commit = code_commit()  # the code this process has loaded, whatever HEAD becomes

        def fit(spec: RunSpec) -> dict:
            if spec.horizon not in data_of:
                data_of[spec.horizon] = covariate_data(
                    load_splits(spec.dataset, spec.lookback, spec.horizon, args.data_dir))
            record = run_one(spec, data_of[spec.horizon], args.out_dir, args.progress,
                             commit=commit)
            print(f"[covariates]   test MAE {record['test_mae']:.4f}, val MSE "
                  f"{record['val_mse']:.4f}, scored in {record['score_seconds']:.0f} s",
                  flush=True)
            return record

        for spec in specs:  # one at a time, so that the report follows every finished run
            run_missing([spec], cache, fit, "covariates")
            write_report(load_jsonl(cache), args.out_dir, training, command)
    write_report(load_jsonl(cache), args.out_dir, training, command)
    print(f"[covariates] report: {args.out_dir / 'covariates.md'}")


if __name__ == "__main__":
    sys.exit(main())
